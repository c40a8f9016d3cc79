"""A workload: the models `systolic compare` sweeps together, each with a weight, and the
results of a configuration over it.

Models come from `--model PATH[:WEIGHT]` (repeatable; weight 1 when left out), from a TOML file
(`--workload FILE`: `[[model]]` tables with `path` and an optional `weight`, paths relative to
the file), or from the positional MODEL (weight 1). A configuration's workload result holds
its result on every model; its weighted cycles are Σ weight · total cycles, its time the
weighted cycles at the clock (`clock_mhz`), in milliseconds, its energy Σ weight · energy per
inference (docs/energy.md), its area the analytic model's estimate (`area_model.area_mm2`,
mm² at the densities stated there). A configuration that failed on
any model has no workload figures: its `error` names the model and the reason.
"""

import dataclasses
import math
import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from systolic.compare.area_model import area_mm2
from systolic.compare.result import ConfigResult
from systolic.config import ArrayConfig
from systolic.errors import ConfigError

__all__ = [
    "WorkloadModel", "WorkloadResult", "combine", "cycles_to_ms", "parse_model_option",
    "read_workload",
]  # fmt: skip


@dataclasses.dataclass(frozen=True)
class WorkloadModel:
    """One model of a workload: its path as the user wrote it, and its weight (> 0)."""

    path: str
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.weight) and self.weight > 0):
            raise ConfigError(f"model {self.path!r}: the weight must be a number above 0, "
                              f"not {self.weight!r}")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"model": self.path, "weight": _number(self.weight)}


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def parse_model_option(text: str) -> WorkloadModel:
    """Parse `--model PATH[:WEIGHT]` (a trailing ":NUMBER" is the weight)."""
    path, colon, tail = text.rpartition(":")
    if colon and path:
        try:
            weight = float(tail)
        except ValueError:
            return WorkloadModel(text)
        return WorkloadModel(path, weight)
    if not text:
        raise ConfigError("--model needs a path, for example --model resnet50.onnx:2")
    return WorkloadModel(text)


def read_workload(path: str | os.PathLike[str]) -> list[WorkloadModel]:
    """Read a workload TOML file (module docstring); an error names the file and what to fix."""
    try:
        document = tomllib.loads(Path(path).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"--workload {os.fspath(path)!r}: {err}") from None
    tables = document.get("model")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"--workload {os.fspath(path)!r} lists no models: write [[model]] "
                          "tables with path = \"...\" and an optional weight = N")  # fmt: skip
    models = []
    for number, table in enumerate(tables, 1):
        model_path, weight = table.get("path"), table.get("weight", 1)
        well_formed = isinstance(model_path, str) and isinstance(weight, int | float)
        if not well_formed or isinstance(weight, bool) or set(table) - {"path", "weight"}:
            raise ConfigError(
                f"--workload {os.fspath(path)!r}: model {number} needs path (a string) and an "
                "optional weight (a number), nothing else"
            )
        models.append(WorkloadModel(os.fspath(Path(path).parent / model_path), float(weight)))
    return models


@dataclasses.dataclass(frozen=True)
class WorkloadResult:
    """One configuration over a workload (module docstring); `pareto` is set by
    `systolic.compare.pareto.mark_pareto`."""

    config: ArrayConfig
    label: str
    models: tuple[WorkloadModel, ...]
    results: tuple[ConfigResult, ...]  # one per model, in workload order
    clock_mhz: float
    pareto: bool = False

    @property
    def error(self) -> str:
        """The first failed model and its reason ("" when every model ran)."""
        for model, result in zip(self.models, self.results, strict=True):
            if result.failed:
                return f"{model.path}: {result.error}" if len(self.models) > 1 else result.error
        return ""

    @property
    def weighted_cycles(self) -> float:
        return sum(
            m.weight * r.total_cycles for m, r in zip(self.models, self.results, strict=True)
        )

    @property
    def time_ms(self) -> float:
        """The weighted cycles at `clock_mhz`, in milliseconds."""
        return cycles_to_ms(self.weighted_cycles, self.clock_mhz)

    @property
    def energy_pj(self) -> float | None:
        """Σ weight · energy per inference (pJ) over the models; None when a model has none."""
        energies = [r.energy_pj for r in self.results]
        if any(e is None for e in energies):
            return None
        return sum(m.weight * e for m, e in zip(self.models, energies, strict=True) if e is not None)

    @property
    def sram_kib(self) -> int:
        """On-chip SRAM: scratchpad and accumulator memory, KiB."""
        return self.config.spad_kib + self.config.acc_kib

    @property
    def area_mm2(self) -> float:
        """The analytic area model's estimate for the configuration (`area_model`), mm²."""
        return area_mm2(self.config)

    def costs(self) -> tuple[float, ...]:
        """The figures the Pareto front minimises: time, PE count, on-chip SRAM, the
        weighted energy when every model has one, and the estimated area."""
        energy = self.energy_pj
        return (self.time_ms, float(self.config.pes), float(self.sram_kib),
                *(() if energy is None else (energy,)), self.area_mm2)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        failed = bool(self.error)
        return {
            "label": self.label,
            "config": self.config.to_dict(),
            "cycles": [None if r.failed else r.total_cycles for r in self.results],
            "weighted_cycles": None if failed else _number(self.weighted_cycles),
            "time_ms": None if failed else round(self.time_ms, 9),
            "pes": self.config.pes,
            "sram_kib": self.sram_kib,
            "energy_pj": None if failed or self.energy_pj is None else round(self.energy_pj, 3),
            "area_mm2": round(self.area_mm2, 6),
            "pareto": self.pareto,
            "error": self.error or None,
        }


def cycles_to_ms(cycles: float, clock_mhz: float) -> float:
    """Return the time of `cycles` at `clock_mhz`, in milliseconds."""
    return cycles / (clock_mhz * 1e3)


def combine(
    models: Sequence[WorkloadModel],
    per_model: Sequence[Sequence[ConfigResult]],
    clock_mhz: float,
) -> list[WorkloadResult]:
    """Return one workload result per configuration from each model's sweep (same
    configurations, same order)."""
    firsts = per_model[0]
    for results in per_model:
        if [r.config for r in results] != [r.config for r in firsts]:
            raise ValueError("every model of a workload must be swept over the same configurations")
    columns = zip(*per_model, strict=True)
    return [WorkloadResult(row[0].config, row[0].label, tuple(models), row, clock_mhz)
            for row in columns]  # fmt: skip
