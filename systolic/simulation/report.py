"""The result of `systolic simulate`: the per-layer table and the JSON document.

The JSON is a stable interface (README, "simulate JSON"): keys are only ever added. Schema
`systolic.simulate/1`:

- `schema`, `model` (path or "bundled:NAME"), `backend`, `engine` ("native" or "python": the
  engine of the `model` backend, `systolic.simulation.engine`; null for the other backends),
  `config` (`ArrayConfig.to_dict()`),
  `inputs` (name -> {shape, dtype}), `input_source` ("random seed N" or the file),
- `total_cycles`: cycles of every accelerator run, summed,
- `layers`: in execution order, each {`name`, `op`, `unit` (array | vector | host), `macs`,
  `cycles`, `ideal_cycles` (MACs / (rows·cols), rounded up; 0 off the array), `stall_cycles`,
  `active_cycles` (the cycles the layer's own unit worked on it, wherever they fell: EXECUTE
  for array layers; can exceed `cycles` when the layer overlapped the previous one),
  `utilization` (MACs / (max(cycles, active_cycles)·rows·cols) for array layers, at most 1;
  else 0), `note`, `energy_pj` (pJ of one inference; null without energies, 0 for host
  layers) and `energy` (pJ per component, or null)},
- `totals`: {`macs`, `cycles`, `array_cycles`, `ideal_cycles`, `utilization`} (cycles of the
  accelerator only: host layers cost none), and with a host cost model
  (`systolic.simulation.host_cost`, `--host-ops-per-cycle N`) `host_ops_per_cycle`,
  `host_cycles` (the host layers' estimated cycles) and `cycles_with_host` (their sum with
  `cycles`); each layer then has `host_cycles` too (0 off the host),
- `coverage`: {`array_macs`, `host_macs`, `array_mac_fraction`, `vector_elements`,
  `host_elements` (elements produced by elementwise layers on each unit), `host_layers`,
  `layers`, `host_bytes` (placed tensors host layers read and write),
  `accelerator_elementwise_layers`, `host_elementwise_layers`, `elementwise_layer_fraction`
  (element-wise layers: `coverage.layer_kind`)}
  (`systolic.simulation.coverage`),
- `checks`: {`reference_bit_exact` (bool), `mismatch` (null or {layer, tile, element, expected,
  actual}), `onnxruntime_ran` (bool), and when it ran `onnxruntime_max_abs_diff`,
  `onnxruntime_equal_fraction`, and for quantized models whose outputs are dequantized with
  one scale `onnxruntime_max_diff_steps` (the largest difference in quantization steps);
  quantized models whose outputs are not all equal add the same three figures against
  onnxruntime with its graph optimizations off (`onnxruntime_unoptimized_max_abs_diff`,
  `onnxruntime_unoptimized_equal_fraction`, `onnxruntime_unoptimized_max_diff_steps`): node by
  node, as the ONNX operators define it, without its fused quantized kernels); for quantized
  models `onnxruntime_explanation` (`OnnxruntimeExplanation.kind`: none, saturation,
  fused_rounding, float_rounding, saturation+float_rounding, layernorm, saturation+layernorm
  or unexplained)};
  float models add `quantization` {max_abs_error, cosine_similarity, top1_agreement (null
  when the output is not a class vector)},
- `runs`: the accelerator runs in order (host layers separate them), each
  {`first_instruction`, `instructions` (HALT included), `total_cycles`, `counters` (the
  Accelerator's counters by name)},
- `energy`: null, or the energy of one inference (`systolic.simulation.energy.EnergySummary`,
  docs/energy.md): {`table`, `table_source`, `unit`, `total_pj`, `macs`, `pj_per_mac`,
  `components`, `events`, `actions`, `clock_mhz`, and with a clock `latency_ms`,
  `inferences_per_second`, `average_power_w`, `tops_per_watt`}.
"""

import dataclasses
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from systolic.sim.energy.energy import COMPONENTS
from systolic.simulation.host_cost import host_layer_cycles
from systolic.simulation.table_layout import fit
from systolic.text import printable

if TYPE_CHECKING:
    from systolic.simulation.coverage import Coverage
    from systolic.simulation.energy import EnergySummary

__all__ = [
    "SCHEMA",
    "LayerResult",
    "Mismatch",
    "OnnxruntimeExplanation",
    "SimulationReport",
    "render_table",
]

SCHEMA = "systolic.simulate/1"


@dataclasses.dataclass(frozen=True)
class LayerResult:
    """One executed layer (a node of the integer graph) and what it cost."""

    name: str
    op: str
    unit: str  # "array", "vector" or "host"
    macs: int
    cycles: int
    ideal_cycles: int = 0
    stall_cycles: int = 0
    note: str = ""
    active_cycles: int = 0
    elements: int = 0  # elements produced by elementwise work (not array, not layout layers)
    host_bytes: int = 0  # bytes of placed tensors a host layer reads and writes
    energy: tuple[float, ...] = ()  # pJ per component (`sim.energy.energy.COMPONENTS`), or ()

    @property
    def energy_pj(self) -> float | None:
        """The layer's energy in pJ (None when it was not computed)."""
        return sum(self.energy) if self.energy else None

    def utilization(self, pes: int) -> float:
        """MACs per PE-cycle while this layer ran: MACs / (pes · max(cycles, active_cycles)),
        so at most 1 even when the layer overlapped the previous one and was attributed fewer
        cycles than its unit worked on it (0 for layers off the array)."""
        window = max(self.cycles, self.active_cycles)
        if self.unit != "array" or window == 0:
            return 0.0
        return self.macs / (window * pes)

    def to_json(self, pes: int) -> dict[str, Any]:
        return {
            "name": self.name,
            "op": self.op,
            "unit": self.unit,
            "macs": self.macs,
            "cycles": self.cycles,
            "ideal_cycles": self.ideal_cycles,
            "stall_cycles": self.stall_cycles,
            "active_cycles": self.active_cycles,
            "utilization": round(self.utilization(pes), 6),
            "note": self.note,
            "energy_pj": None if self.energy_pj is None else round(self.energy_pj, 3),
            "energy": None if not self.energy else dict(zip(
                COMPONENTS, (round(value, 3) for value in self.energy), strict=True)),
        }


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """The first accelerator value that differs from the reference."""

    layer: str
    tile: str
    element: tuple[int, ...]
    expected: int | float
    actual: int | float

    def text(self) -> str:
        index = ",".join(str(i) for i in self.element)
        return (
            f"layer {self.layer!r}, {self.tile}, element [{index}]: reference {self.expected}, "
            f"accelerator {self.actual}"
        )


@dataclasses.dataclass(frozen=True)
class OnnxruntimeExplanation:
    """Why a quantized model's outputs differ from onnxruntime's default session (see
    `systolic.simulation.onnxruntime_explain`): `kind` is "none" (they do not differ),
    "saturation" (this CPU's onnxruntime saturates uint8 x int8 int16 pair sums; equal once
    they cannot saturate), "fused_rounding" (equal with its graph optimizations off),
    "float_rounding" (its float ops round differently in the last bits and a dynamic
    quantization downstream turns that into other steps; proven by replaying our reference
    with its float values), "saturation+float_rounding" (both), "layernorm" (it differs only
    in the values the model's layer normalizations write, which LAYERNORM computes exactly
    where the model quantizes its steps; proven by replay), "saturation+layernorm" or
    "unexplained".
    `layers`: the layers whose pair sums leave int16 on this CPU."""

    kind: str
    layers: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class SimulationReport:
    """Everything `systolic simulate` reports."""

    model: str
    backend: str
    config: Mapping[str, object]
    inputs: Mapping[str, Mapping[str, object]]
    input_source: str
    layers: Sequence[LayerResult]
    mismatch: Mismatch | None
    onnxruntime: Mapping[str, float] | None = None
    onnxruntime_explanation: OnnxruntimeExplanation | None = None
    quantization: Mapping[str, float | None] | None = None
    runs: Sequence[Mapping[str, object]] = ()
    engine: str | None = None
    energy: "EnergySummary | None" = None
    host_ops_per_cycle: float | None = None  # the host cost model, or None: host layers free

    @property
    def pes(self) -> int:
        rows, cols = self.config["rows"], self.config["cols"]
        assert isinstance(rows, int) and isinstance(cols, int)
        return rows * cols

    @property
    def total_cycles(self) -> int:
        return sum(layer.cycles for layer in self.layers if layer.unit != "host")

    def host_cycles(self, layer: LayerResult) -> int:
        """A layer's estimated host cycles (`host_cost`; 0 off the host or without a model)."""
        if layer.unit != "host" or self.host_ops_per_cycle is None:
            return 0
        return host_layer_cycles(layer.macs, layer.elements, self.host_ops_per_cycle)

    @property
    def latency_cycles(self) -> int:
        """The cycles of one inference: the accelerator's, plus the host's when modelled."""
        return self.total_cycles + sum(self.host_cycles(layer) for layer in self.layers)

    def totals(self) -> dict[str, Any]:
        array = [layer for layer in self.layers if layer.unit == "array"]
        array_cycles = sum(layer.cycles for layer in array)
        array_macs = sum(layer.macs for layer in array)
        totals = {
            "macs": sum(layer.macs for layer in self.layers),
            "cycles": self.total_cycles,
            "array_cycles": array_cycles,
            "ideal_cycles": sum(layer.ideal_cycles for layer in array),
            "utilization": round(array_macs / (array_cycles * self.pes), 6)
            if array_cycles
            else 0.0,
        }
        if self.host_ops_per_cycle is not None:
            totals["host_ops_per_cycle"] = self.host_ops_per_cycle
            totals["host_cycles"] = self.latency_cycles - self.total_cycles
            totals["cycles_with_host"] = self.latency_cycles
        return totals

    def _layer_json(self, layer: LayerResult) -> dict[str, Any]:
        row = layer.to_json(self.pes)
        if self.host_ops_per_cycle is not None:
            row["host_cycles"] = self.host_cycles(layer)
        return row

    def coverage(self) -> "Coverage":
        """How much ran where (`systolic.simulation.coverage`)."""
        from systolic.simulation.coverage import coverage

        return coverage(self.layers)

    def to_json(self) -> dict[str, Any]:
        checks: dict[str, Any] = {
            "reference_bit_exact": self.mismatch is None,
            "mismatch": None
            if self.mismatch is None
            else {
                "layer": self.mismatch.layer,
                "tile": self.mismatch.tile,
                "element": list(self.mismatch.element),
                "expected": self.mismatch.expected,
                "actual": self.mismatch.actual,
            },
            "onnxruntime_ran": self.onnxruntime is not None,
        }
        if self.onnxruntime is not None:
            checks["onnxruntime_max_abs_diff"] = self.onnxruntime["max_abs_diff"]
            checks["onnxruntime_equal_fraction"] = self.onnxruntime["equal_fraction"]
            for key in ("max_diff_steps", "unoptimized_max_abs_diff",
                        "unoptimized_equal_fraction", "unoptimized_max_diff_steps"):
                if key in self.onnxruntime:
                    checks[f"onnxruntime_{key}"] = self.onnxruntime[key]
            if self.onnxruntime_explanation is not None:
                checks["onnxruntime_explanation"] = self.onnxruntime_explanation.kind
        if self.quantization is not None:
            checks["quantization"] = dict(self.quantization)
        return {
            "schema": SCHEMA,
            "model": self.model,
            "backend": self.backend,
            "engine": self.engine,
            "config": dict(self.config),
            "inputs": {name: dict(info) for name, info in self.inputs.items()},
            "input_source": self.input_source,
            "total_cycles": self.total_cycles,
            "layers": [self._layer_json(layer) for layer in self.layers],
            "totals": self.totals(),
            "coverage": self.coverage().to_json(),
            "checks": checks,
            "runs": [dict(run) for run in self.runs],
            "energy": None if self.energy is None else self.energy.to_json(),
        }


def render_table(report: SimulationReport, width: int | None = None) -> str:
    """Return the per-layer table and totals as `systolic simulate` prints them, fitted to
    `width` columns (None: any width) as `table_layout.fit` does."""
    energy = report.energy is not None
    header = ("layer", "op", "unit", "MACs", "cycles", "stalls", "util") + (
        ("energy uJ",) if energy else ())
    rows = [
        (
            printable(layer.name),
            printable(layer.op),
            layer.unit,
            f"{layer.macs:,}",
            _cycles_cell(report, layer),
            f"{layer.stall_cycles:,}" if layer.unit != "host" else "-",
            f"{100 * layer.utilization(report.pes):.1f}%" if layer.unit == "array" else "-",
        ) + ((_micro(layer.energy_pj),) if energy else ())
        for layer in report.layers
    ]
    lines = fit(header, rows, left=3, width=width)
    totals = report.totals()
    total = (
        f"total: {_total_cycles(totals)}, {totals['macs']:,} MACs; array "
        f"{totals['array_cycles']:,} cycles (ideal {totals['ideal_cycles']:,}), utilization "
        f"{100 * totals['utilization']:.1f}%"
    )
    lines += ["", *textwrap.wrap(total, width or len(total), subsequent_indent="  ")]
    summary = report.coverage().text(host_modelled=report.host_ops_per_cycle is not None)
    lines += textwrap.wrap(summary, width or len(summary), subsequent_indent="  ")
    for line in report.energy.lines() if report.energy is not None else ():
        lines += textwrap.wrap(line, width or len(line), subsequent_indent="    ")
    return "\n".join(lines) + "\n"


def _cycles_cell(report: SimulationReport, layer: LayerResult) -> str:
    """A layer's cycles; a host layer's estimate as "~N" with a host model, else "-"."""
    if layer.unit != "host":
        return f"{layer.cycles:,}"
    return f"~{report.host_cycles(layer):,}" if report.host_ops_per_cycle is not None else "-"


def _total_cycles(totals: Mapping[str, Any]) -> str:
    """The total line's cycles: the accelerator's only, or with the host's estimate."""
    if "cycles_with_host" not in totals:
        return f"{totals['cycles']:,} cycles (accelerator only)"
    return (f"{totals['cycles_with_host']:,} cycles ({totals['cycles']:,} on the accelerator + "
            f"{totals['host_cycles']:,} estimated on the host at "
            f"{totals['host_ops_per_cycle']:g} operations per cycle)")


def _micro(picojoules: float | None) -> str:
    """A layer's energy in uJ (3 decimals), "-" for none (host layers)."""
    return "-" if not picojoules else f"{picojoules * 1e-6:,.3f}"
