"""Per-layer cycles of one compiled model on one backend, for `systolic compare`.

`accelerator_runs(compiled, backend, inputs)` runs every accelerator segment of a compiled
model and returns its per-instruction times (`layer_timing.RunTimes`):

- backend "model" (the default of `compare`): the analytic cycle model
  (`systolic.sim.timing.program_model.ProgramModel`), which is what
  `run_program(..., backend="model")` reports, without computing the values: the times
  depend on the instructions only, and `compare` reports only cycles;
- any other backend ("rtl", "verilator"): the model runner of `systolic simulate`
  (`systolic.simulation.runner.run_compiled`) on that backend, with the model's inputs.

`systolic.simulation.layer_rows.layer_rows(compiled, runs)` turns the times into the per-layer
rows, the same function `systolic simulate` uses.
"""

from collections.abc import Mapping

import numpy as np

from systolic.mapper.lowering.compiled import AcceleratorStep, CompiledModel
from systolic.sim.result import TimesTable
from systolic.sim.timing.program_model import ProgramModel
from systolic.simulation.layer_timing import RunTimes
from systolic.simulation.runner import check_backend, run_compiled, segment_runner

__all__ = ["accelerator_runs", "check_backend"]

TIMING_BACKEND = "model"
"""The backend whose times come from the cycle model alone."""


def _model_runs(compiled: CompiledModel) -> list[RunTimes]:
    model = ProgramModel(compiled.config)
    runs = []
    for step in compiled.steps():
        if isinstance(step, AcceleratorStep):
            timing = model.run(step.program.instructions, words=step.program.words)
            times = TimesTable(timing.accept, timing.issue, timing.complete)
            runs.append(RunTimes(step.first, times, timing.total_cycles))
    return runs


def accelerator_runs(
    compiled: CompiledModel, backend: str, inputs: Mapping[str, np.ndarray]
) -> list[RunTimes]:
    """Return the times of every accelerator run of `compiled` (module docstring); `inputs`
    (by model input name) are used by the simulating backends only."""
    check_backend(backend)
    if backend == TIMING_BACKEND:
        return _model_runs(compiled)
    return run_compiled(compiled, inputs, segment_runner(backend)).run_times()
