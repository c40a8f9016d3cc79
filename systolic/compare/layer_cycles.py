"""Per-layer cycles of one compiled model on one backend, for `systolic compare`.

`accelerator_runs(compiled, backend, inputs)` runs every accelerator segment of a compiled
model and returns its per-instruction times (`layer_timing.RunTimes`):

- backend "model" (the default of `compare`): the analytic cycle model
  (`systolic.sim.timing.program_model.ProgramModel`), which is what
  `run_program(..., backend="model")` reports, without computing the values: the times
  depend on the instructions only, and `compare` reports only cycles;
- any other backend ("rtl", "verilator"): `run_program` on the real memory image, with the
  model's inputs in place and the host layers run in between (as `systolic simulate` does).

`layer_results(compiled, runs)` turns the times into the per-layer rows `systolic simulate`
prints (`LayerResult`), with the same attribution (`systolic.simulation.layer_timing`).
"""

from collections.abc import Mapping, Sequence

import numpy as np

from systolic.errors import ConfigError
from systolic.isa.program import LayerUnit, ProgramLayer
from systolic.mapper.lowering.compiled import (
    AcceleratorStep,
    CompiledModel,
    run_host_step,
    write_value,
)
from systolic.sim.result import InstructionTimes
from systolic.sim.run.backends import BACKENDS, run_program
from systolic.sim.timing.program_model import ProgramModel
from systolic.simulation.layer_timing import (
    RunTimes,
    ideal_array_cycles,
    layer_timings,
    program_units,
)
from systolic.simulation.report import LayerResult

__all__ = ["accelerator_runs", "check_backend", "layer_results"]

TIMING_BACKEND = "model"
"""The backend whose times come from the cycle model alone."""


def check_backend(backend: str) -> None:
    """Raise ConfigError unless `backend` names a simulation backend."""
    if backend not in BACKENDS:
        known = ", ".join(sorted(BACKENDS))
        raise ConfigError(f"unknown simulation backend {backend!r}: use one of {known}")


def _model_runs(compiled: CompiledModel) -> list[RunTimes]:
    model = ProgramModel(compiled.config)
    runs = []
    for step in compiled.steps():
        if isinstance(step, AcceleratorStep):
            timing = model.run(step.program.instructions)
            times = tuple(
                InstructionTimes(*cycles)
                for cycles in zip(timing.accept, timing.issue, timing.complete, strict=True)
            )
            runs.append(RunTimes(step.first, times, timing.total_cycles))
    return runs


def _simulated_runs(
    compiled: CompiledModel, backend: str, inputs: Mapping[str, np.ndarray]
) -> list[RunTimes]:
    image = compiled.memory_image()
    image.extend(bytes(-len(image) % compiled.config.bus_bytes))
    memory = np.frombuffer(image, dtype=np.uint8)
    for placement in compiled.inputs:
        write_value(memory, placement, inputs[placement.name])
    host_values: dict[str, np.ndarray] = {}
    runs = []
    for step in compiled.steps():
        if not isinstance(step, AcceleratorStep):
            run_host_step(step, compiled.program, memory, host_values, compiled.opsets)
            continue
        result = run_program(step.program, image, backend=backend)
        image = bytearray(result.memory)
        memory = np.frombuffer(image, dtype=np.uint8)
        runs.append(RunTimes(step.first, result.times, result.total_cycles))
    return runs


def accelerator_runs(
    compiled: CompiledModel, backend: str, inputs: Mapping[str, np.ndarray]
) -> list[RunTimes]:
    """Return the times of every accelerator run of `compiled` (module docstring); `inputs`
    (by model input name) are used by the simulating backends only."""
    check_backend(backend)
    if backend == TIMING_BACKEND:
        return _model_runs(compiled)
    return _simulated_runs(compiled, backend, inputs)


def unit_name(layer: ProgramLayer) -> str:
    """Return "array", "host" or "vector" (vector datapath and layout), as `simulate` does."""
    if layer.unit is LayerUnit.ARRAY:
        return "array"
    if layer.unit is LayerUnit.HOST:
        return "host"
    return "vector"


def layer_results(compiled: CompiledModel, runs: Sequence[RunTimes]) -> list[LayerResult]:
    """Return one `LayerResult` per layer of `compiled`, in execution order."""
    config = compiled.config
    timings = layer_timings(compiled.layers, program_units(compiled.program), runs)
    results = []
    for layer, timing in zip(compiled.layers, timings, strict=True):
        array = layer.unit is LayerUnit.ARRAY
        results.append(
            LayerResult(
                name=layer.name,
                op=layer.op,
                unit=unit_name(layer),
                macs=layer.macs,
                cycles=timing.cycles,
                ideal_cycles=ideal_array_cycles(layer.macs, config) if array else 0,
                stall_cycles=timing.stall_cycles,
                note=layer.reason if layer.unit is LayerUnit.HOST else "",
                active_cycles=timing.active,
            )
        )
    return results
