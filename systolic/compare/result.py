"""What `systolic compare` reports: one `ConfigResult` per configuration, and the JSON.

The JSON is a stable interface (README, "compare"): keys are only ever added. Schema
`systolic.compare/1`:

- `schema`, `source` ("model" or "topology"), `model` (the model path, "bundled:NAME" or the
  topology file), `backend`, `engine` ("native" or "python": the engine of the `model` backend,
  `systolic.simulation.engine`; null for the other backends), `input_source` ("random seed N", the --input file, or for a
  topology "random weights seed N"),
- `configurations`: in sweep order, each {`label` (the fields that vary, e.g. "8x8 ws"),
  `config` (`ArrayConfig.to_dict()`), `total_cycles` (every accelerator run, summed),
  `stall_cycles` (summed over the layers), `macs` (array layers), `array_cycles`,
  `array_stall_cycles`, `ideal_cycles` (sum over array layers of ceil(MACs / (rows·cols))),
  `utilization` (array MACs / (array_cycles · rows · cols)), `ratio_to_ideal`
  (array_cycles / ideal_cycles), `energy_pj` (one inference on the accelerator, docs/energy.md;
  null without energies), `layers`: the per-layer rows of `systolic simulate`'s JSON
  ({name, op, unit, macs, cycles, ideal_cycles, stall_cycles, active_cycles, utilization,
  note, energy_pj, energy}; a layer's utilization is MACs / (max(cycles, active_cycles) · rows · cols), at most
  1), `error` (null, or why the configuration gave no results: it does not fit, an
  unsupported layer; then `layers` is empty and the figures 0)}.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

from systolic.config import ArrayConfig
from systolic.simulation.report import LayerResult

__all__ = ["SCHEMA", "CompareReport", "ConfigResult"]

SCHEMA = "systolic.compare/1"


@dataclasses.dataclass(frozen=True)
class ConfigResult:
    """One configuration's per-layer results and totals."""

    config: ArrayConfig
    label: str
    layers: tuple[LayerResult, ...]
    total_cycles: int
    error: str = ""
    """Why the configuration gave no results (it does not fit, an unsupported layer, ...):
    then `layers` is empty and `total_cycles` 0; empty when it ran."""

    @property
    def failed(self) -> bool:
        return bool(self.error)

    @property
    def array_layers(self) -> list[LayerResult]:
        return [layer for layer in self.layers if layer.unit == "array"]

    @property
    def stall_cycles(self) -> int:
        return sum(layer.stall_cycles for layer in self.layers if layer.unit != "host")

    @property
    def macs(self) -> int:
        return sum(layer.macs for layer in self.array_layers)

    @property
    def array_cycles(self) -> int:
        return sum(layer.cycles for layer in self.array_layers)

    @property
    def array_stall_cycles(self) -> int:
        return sum(layer.stall_cycles for layer in self.array_layers)

    @property
    def ideal_cycles(self) -> int:
        return sum(layer.ideal_cycles for layer in self.array_layers)

    @property
    def utilization(self) -> float:
        """Array MACs per PE-cycle over the array layers' cycles (0 without array layers)."""
        cycles = self.array_cycles
        return self.macs / (cycles * self.config.pes) if cycles else 0.0

    @property
    def energy_pj(self) -> float | None:
        """Energy of one inference on the accelerator, pJ (None when no layer has one)."""
        energies = [layer.energy_pj for layer in self.layers if layer.energy_pj is not None]
        return sum(energies) if energies else None

    @property
    def ratio_to_ideal(self) -> float:
        """Array cycles / ideal cycles (0 without array layers)."""
        return self.array_cycles / self.ideal_cycles if self.ideal_cycles else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "config": self.config.to_dict(),
            "total_cycles": self.total_cycles,
            "stall_cycles": self.stall_cycles,
            "macs": self.macs,
            "array_cycles": self.array_cycles,
            "array_stall_cycles": self.array_stall_cycles,
            "ideal_cycles": self.ideal_cycles,
            "utilization": round(self.utilization, 6),
            "ratio_to_ideal": round(self.ratio_to_ideal, 6),
            "energy_pj": None if self.energy_pj is None else round(self.energy_pj, 3),
            "layers": [layer.to_json(self.config.pes) for layer in self.layers],
            "error": self.error or None,
        }


@dataclasses.dataclass(frozen=True)
class CompareReport:
    """Everything `systolic compare` reports (module docstring)."""

    source: str  # "model" or "topology"
    model: str
    backend: str
    input_source: str
    results: Sequence[ConfigResult]
    engine: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "source": self.source,
            "model": self.model,
            "backend": self.backend,
            "engine": self.engine,
            "input_source": self.input_source,
            "configurations": [result.to_json() for result in self.results],
        }
