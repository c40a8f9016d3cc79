"""One point of a sweep: a model compiled for one configuration and run on a backend.

`run_config` returns the point's `ConfigResult` and lets errors through; `run_point` is what
a sweep calls, on any engine (in-process, worker process, Dask worker): a configuration that
cannot run the model (it does not fit, an unsupported layer: any `SystolicError`) becomes a
result with its reason in `error` and no layers, so the other points still finish.
"""

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from systolic.compare.layer_cycles import accelerator_runs
from systolic.compare.result import ConfigResult
from systolic.config import ArrayConfig
from systolic.errors import SystolicError
from systolic.ir import Graph, Model
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.collector import collector_paused
from systolic.sim.energy.table import EnergyTable
from systolic.sim.timing.layer_cycles import layer_cycles
from systolic.simulation.energy import layer_energies
from systolic.simulation.layer_rows import layer_rows

__all__ = ["OnResult", "Point", "Work", "run_config", "run_point"]

Point = tuple[ArrayConfig, str]
"""A configuration and its label."""
OnResult = Callable[[int, ConfigResult], None]
"""Called with a point's index (in the list given to a runner) and its result."""


def run_config(
    integer: Model | Graph,
    config: ArrayConfig,
    *,
    label: str,
    backend: str = "model",
    inputs: Mapping[str, np.ndarray] | None = None,
    energy_table: EnergyTable | None = None,
) -> ConfigResult:
    """Compile `integer` for `config`, run it on `backend` and return its results, with every
    layer's energy on `energy_table` (default: the bundled 45 nm table). The cyclic garbage
    collector is paused until the point's compiled program, times and energies have died
    (`collector_paused`): they are freed by reference counting, so the collector would only
    walk them, while they are built or after, when it resumes."""
    with collector_paused():
        return _results(integer, config, label, backend, inputs or {},
                        energy_table or EnergyTable.default())  # fmt: skip


def _results(integer: Model | Graph, config: ArrayConfig, label: str, backend: str,
             inputs: Mapping[str, np.ndarray], energy_table: EnergyTable) -> ConfigResult:
    """`run_config`'s work; everything but the result dies when it returns."""
    compiled = compile_model(integer, config, layer_cycles=layer_cycles)
    runs = accelerator_runs(compiled, backend, inputs)
    energies = layer_energies(compiled, energy_table)
    layers = tuple(layer_rows(compiled, runs, energies))
    return ConfigResult(config, label, layers, sum(run.total_cycles for run in runs))


def run_point(
    integer: Model | Graph,
    config: ArrayConfig,
    *,
    label: str,
    backend: str,
    inputs: Mapping[str, np.ndarray] | None,
    energy_table: EnergyTable | None = None,
) -> ConfigResult:
    """Return `run_config`'s result, or a failed result naming the `SystolicError`."""
    try:
        return run_config(integer, config, label=label, backend=backend, inputs=inputs,
                          energy_table=energy_table)  # fmt: skip
    except SystolicError as err:
        return ConfigResult(config, label, (), 0, error=str(err))


@dataclasses.dataclass(frozen=True)
class Work:
    """What every point of a sweep shares, shipped once to each worker: the integer graph,
    the inputs the simulating backends run on, the backend and the energy table (None: the
    bundled one)."""

    integer: Model | Graph
    inputs: Mapping[str, np.ndarray]
    backend: str
    energy_table: EnergyTable | None = None

    def run(self, config: ArrayConfig, label: str) -> ConfigResult:
        """Return the point's result (`run_point`)."""
        return run_point(self.integer, config, label=label, backend=self.backend,
                         inputs=self.inputs, energy_table=self.energy_table)  # fmt: skip
