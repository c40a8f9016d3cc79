"""The text table `systolic compare` prints, and its CSV form.

`render_summary(results)`: one row per configuration (total cycles, stall cycles, array
cycles, ideal cycles, ratio, utilization, the share of MACs on the array: the rest runs on
the host, outside the cycle totals; the share of element-wise layers on the accelerator,
`coverage.layer_kind`; energy per inference in uJ, docs/energy.md). `render_layers(results)`: one row per layer with,
for every configuration side by side, its cycles, stall cycles and array utilization.

`to_csv(results)`: one row per (configuration, layer), then a `(total)` row per configuration
(README, "compare"): columns `CSV_COLUMNS`.
"""

import csv
import io
from collections.abc import Sequence

from systolic.compare.result import ConfigResult
from systolic.simulation.coverage import coverage
from systolic.simulation.report import LayerResult
from systolic.simulation.table_layout import fit
from systolic.text import printable

__all__ = ["CSV_COLUMNS", "TOTAL_ROW", "render_layers", "render_summary", "to_csv"]

CSV_COLUMNS = (
    "configuration", "rows", "cols", "dataflow", "spad_kib", "acc_kib", "bus_bytes",
    "mem_latency", "layer", "op", "unit", "macs", "cycles", "ideal_cycles", "stall_cycles",
    "utilization", "energy_pj",
)  # fmt: skip
TOTAL_ROW = "(total)"
"""The `layer` cell of a configuration's totals row in the CSV."""


def render_summary(results: Sequence[ConfigResult], width: int | None = None) -> str:
    """Return the one-row-per-configuration table, fitted to `width` (`table_layout.fit`); a
    configuration that failed shows "failed", and its reason below the table."""
    header = ("configuration", "total cycles", "stalls", "array cycles", "ideal", "ratio",
              "util", "MACs on array", "eltwise on acc", "energy uJ")  # fmt: skip
    rows = [
        (
            result.label,
            f"{result.total_cycles:,}",
            f"{result.stall_cycles:,}",
            f"{result.array_cycles:,}",
            f"{result.ideal_cycles:,}",
            f"{result.ratio_to_ideal:.3f}",
            f"{100 * result.utilization:.1f}%",
            f"{100 * coverage(result.layers).array_mac_share:.1f}%",
            f"{100 * coverage(result.layers).elementwise_layer_share:.1f}%",
            _micro(result.energy_pj),
        )
        if not result.failed
        else (result.label, "failed", *["-"] * 8)
        for result in results
    ]
    notes = [f"{printable(r.label)}: {printable(r.error)}" for r in results if r.failed]
    return "\n".join([*fit(header, rows, left=1, width=width), *notes]) + "\n"


def _micro(picojoules: float | None) -> str:
    return "-" if picojoules is None else f"{picojoules * 1e-6:,.3f}"


def _pj(picojoules: float | None) -> str:
    return "" if picojoules is None else f"{picojoules:.3f}"


def _layer_cells(layer: LayerResult | None, pes: int) -> tuple[str, str, str]:
    if layer is None:
        return ("n/a", "n/a", "n/a")
    if layer.unit == "host":
        return ("host", "-", "-")
    util = f"{100 * layer.utilization(pes):.1f}%" if layer.unit == "array" else "-"
    return (f"{layer.cycles:,}", f"{layer.stall_cycles:,}", util)


def render_layers(results: Sequence[ConfigResult], width: int | None = None) -> str:
    """Return the per-layer table, configurations side by side (cycles, stalls, util each);
    a layer on the host in one configuration shows "host" there. Past `width` columns the
    configurations wrap into blocks, each repeating layer, op and MACs (`table_layout.fit`)."""
    names: list[str] = []
    info: dict[str, LayerResult] = {}
    for result in results:
        for layer in result.layers:
            if layer.name not in info:
                names.append(layer.name)
                info[layer.name] = layer
    by_config = [{layer.name: layer for layer in result.layers} for result in results]
    header = ["layer", "op", "MACs"]
    for result in results:
        header += [f"{result.label}: cycles", "stalls", "util"]
    rows = []
    for name in names:
        first = info[name]
        cells = [printable(name), printable(first.op), f"{first.macs:,}"]
        for result, layers in zip(results, by_config, strict=True):
            cells += _layer_cells(layers.get(name), result.config.pes)
        rows.append(cells)
    total = ["total", "", f"{sum(info[n].macs for n in names):,}"]
    for result in results:
        total += [f"{result.total_cycles:,}", f"{result.stall_cycles:,}",
                  f"{100 * result.utilization:.1f}%"]  # fmt: skip
    rows.append(total)
    return "\n".join(fit(header, rows, left=2, width=width, keep=3, group=3)) + "\n"


def to_csv(results: Sequence[ConfigResult]) -> str:
    """Return the CSV text (module docstring); utilization as a fraction, 6 decimals."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for result in results:
        c = result.config
        head = [result.label, c.rows, c.cols, c.dataflow.value, c.spad_kib, c.acc_kib,
                c.bus_bytes, c.mem_latency]  # fmt: skip
        for layer in result.layers:
            writer.writerow([*head, layer.name, layer.op, layer.unit, layer.macs, layer.cycles,
                             layer.ideal_cycles, layer.stall_cycles,
                             f"{layer.utilization(c.pes):.6f}", _pj(layer.energy_pj)])  # fmt: skip
        writer.writerow([*head, TOTAL_ROW, "", "all", result.macs, result.total_cycles,
                         result.ideal_cycles, result.stall_cycles,
                         f"{result.utilization:.6f}", _pj(result.energy_pj)])  # fmt: skip
    return out.getvalue()
