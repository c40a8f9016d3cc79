"""Run one model over many configurations: `configurations` and `sweep` (what `systolic
compare` does, `systolic.compare.sweep`).

>>> import systolic
>>> configs = systolic.configurations(arrays=["4x4", "8x8"], dataflows=["ws", "os"])
>>> [config.shape_text + " " + config.dataflow.value for config in configs]
['4x4 ws', '4x4 os', '8x8 ws', '8x8 os']
>>> result = systolic.sweep(None, configs)  # the bundled LeNet on the cycle model
>>> result.summary.column("configuration")
('4x4 ws', '4x4 os', '8x8 ws', '8x8 os')
>>> cycles = dict(zip(result.summary.column("configuration"),
...                   result.summary.column("total_cycles")))
>>> cycles["8x8 ws"] == systolic.simulate(None, configs[2]).total_cycles
True
"""

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from systolic.api.sources import ModelSource, model_source
from systolic.api.table import Table
from systolic.config import ArrayConfig

if TYPE_CHECKING:
    from systolic.compare.result import ConfigResult

__all__ = ["LAYER_COLUMNS", "SUMMARY_COLUMNS", "Sweep", "configurations", "sweep"]

SUMMARY_COLUMNS = ("configuration", "total_cycles", "stall_cycles", "array_cycles",
                   "ideal_cycles", "ratio_to_ideal", "utilization")  # fmt: skip
LAYER_COLUMNS = ("configuration", "layer", "op", "unit", "macs", "cycles", "stall_cycles",
                 "utilization")  # fmt: skip


def configurations(
    base: ArrayConfig | None = None,
    *,
    arrays: Sequence[str] = (),
    dataflows: Sequence[str] = (),
    spad_kib: Sequence[int] = (),
    acc_kib: Sequence[int] = (),
    bus_bytes: Sequence[int] = (),
) -> list[ArrayConfig]:
    """Return every combination of the listed values ("8x8", "ws", ...), in order, as
    `systolic compare`'s options give them; an empty list keeps `base`'s value."""
    from systolic.compare.grid import config_grid

    return config_grid(base or ArrayConfig(), arrays=arrays, dataflows=dataflows,
                       spad_kib=spad_kib, acc_kib=acc_kib, bus_bytes=bus_bytes)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Sweep:
    """The results of one model over configurations (`results`: one `ConfigResult` each, in
    sweep order); `summary` and `layers` are tables, `to_json()` the `systolic.compare/1`
    document."""

    model: str
    backend: str
    input_source: str
    results: tuple["ConfigResult", ...]

    @property
    def summary(self) -> Table:
        """One row per configuration (`SUMMARY_COLUMNS`), utilization as a fraction."""
        rows = tuple((r.label, r.total_cycles, r.stall_cycles, r.array_cycles, r.ideal_cycles,
                      round(r.ratio_to_ideal, 4), round(r.utilization, 4))
                     for r in self.results)  # fmt: skip
        return Table(SUMMARY_COLUMNS, rows, title=f"{self.model}, {self.backend} backend")

    @property
    def layers(self) -> Table:
        """One row per (configuration, layer) (`LAYER_COLUMNS`): the long format."""
        rows = tuple((r.label, layer.name, layer.op, layer.unit, layer.macs, layer.cycles,
                      layer.stall_cycles, round(layer.utilization(r.config.pes), 4))
                     for r in self.results for layer in r.layers)  # fmt: skip
        return Table(LAYER_COLUMNS, rows, title=self.model)

    def to_json(self) -> dict[str, Any]:
        """Return the `systolic.compare/1` JSON document (README, "compare")."""
        from systolic.compare.result import CompareReport
        from systolic.simulation.engine import engine_name

        return CompareReport("model", self.model, self.backend, self.input_source,
                             self.results, engine=engine_name(self.backend)).to_json()  # fmt: skip

    def to_csv(self) -> str:
        """Return `systolic compare --csv`'s text."""
        from systolic.compare.tables import to_csv

        return to_csv(self.results)

    def __str__(self) -> str:
        return str(self.summary)

    def _repr_html_(self) -> str:
        rows = f"{len(self.layers)} (configuration, layer) rows in <code>.layers</code>"
        return f"{self.summary._repr_html_()}<p>{rows}</p>"


def sweep(
    model: ModelSource = None,
    configs: Sequence[ArrayConfig] = (),
    *,
    backend: str = "model",
    inputs: str | os.PathLike[str] | None = None,
    seed: int = 0,
) -> Sweep:
    """Run the mapper passes on the ONNX model at `model` (None: the bundled LeNet) once, then
    compile and run it for every configuration (default: 8x8 ws and os) on `backend`
    ("model", the default, gives the RTL's cycles without computing values). Cycles do not
    depend on values: a weight-less model (float constants declared without data) runs on
    placeholder weights."""
    from systolic.compare.sweep import prepare_model
    from systolic.compare.sweep import sweep as run_sweep

    path, label = model_source(model)
    prepared = prepare_model(path, input_path=inputs, seed=seed, weightless=True)
    chosen = list(configs) or configurations(dataflows=["ws", "os"])
    results = run_sweep(prepared, chosen, backend=backend)
    return Sweep(label, backend, prepared.input_source, tuple(results))
