"""Run a compiled model step by step: the one loop behind `simulate`, `compare` and the checks.

`run_compiled(compiled, inputs, run_segment, *, after_run=None)`:

- starts from `initial_memory(program)`: zeros with the image segments, as many bytes as the
  program touches (`systolic.sim.timing.native_facts.memory_end`, computed natively when the
  native code builds) rounded up to a whole bus beat, with `inputs` (by model input name)
  written at their placements;
- runs the steps in order (`CompiledModel.steps`): an accelerator step on
  `run_segment(program, image)`, whose result's memory is the image from then on, and then
  calls `after_run(run, memory)`; a host step with its reference operator on the same memory
  (`host_step.run_host_step`);
- returns a `ModelRun`: the final memory, the values host steps made without a placement, and
  every accelerator run (`AcceleratorRun`: its step, times, total cycles and counters).

`segment_runner(backend)` is the `run_segment` of a backend: "golden" runs the golden machine
alone (values, no times: `systolic.sim.run.model_backend.run_golden`, its C engine or the Python
specification), any other name `systolic.sim.run.backends.run_program`.
`simulate(compiled, inputs)` runs a model and returns its outputs.
"""

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from systolic.errors import ConfigError, SimulationError
from systolic.isa.program import Program
from systolic.mapper.lowering.compiled import (
    AcceleratorStep,
    CompiledModel,
    read_value,
    write_value,
)
from systolic.sim.result import InstructionTimes, RunResult
from systolic.sim.run.backends import BACKENDS, initial_memory, run_program
from systolic.sim.run.model_backend import run_golden
from systolic.simulation.host_step import run_host_step
from systolic.simulation.layer_timing import RunTimes

__all__ = [
    "GOLDEN",
    "AcceleratorRun",
    "ModelRun",
    "SegmentRunner",
    "check_backend",
    "run_compiled",
    "segment_runner",
    "simulate",
]

GOLDEN = "golden"
"""The segment runner of values alone (no times): the golden machine."""

SegmentRunner = Callable[[Program, bytearray], RunResult]
"""Runs an accelerator segment from a memory image (which it may change: the runner does not
use it again) and returns the result, whose memory is the image after the run."""


@dataclasses.dataclass(frozen=True)
class AcceleratorRun:
    """One accelerator step and what its backend reported for it."""

    step: AcceleratorStep
    total_cycles: int
    times: Sequence[InstructionTimes]
    counters: Mapping[str, int]

    @property
    def end(self) -> int:
        """Index in the whole program of the instruction the run's HALT stands for: the run
        holds instructions `step.first .. end - 1`."""
        return self.step.first + len(self.step.program.instructions) - 1

    def run_times(self) -> RunTimes:
        """Return the run's times in the form `layer_timing` reads."""
        return RunTimes(self.step.first, self.times, self.total_cycles)

    def to_json(self) -> dict[str, object]:
        """Return the run as an entry of `simulate`'s JSON `runs`."""
        return {"first_instruction": self.step.first,
                "instructions": len(self.step.program.instructions),
                "total_cycles": self.total_cycles, "counters": dict(self.counters)}  # fmt: skip


@dataclasses.dataclass(frozen=True, eq=False)
class ModelRun:
    """A finished run: the final memory (uint8), the host steps' values without a placement
    (by name) and the accelerator runs in order."""

    memory: np.ndarray
    host_values: Mapping[str, np.ndarray]
    runs: tuple[AcceleratorRun, ...]

    def run_times(self) -> list[RunTimes]:
        """Return every accelerator run's times (`layer_timing`'s form)."""
        return [run.run_times() for run in self.runs]

    def outputs(self, compiled: CompiledModel) -> dict[str, np.ndarray]:
        """Return the model's outputs by name, as the final memory holds them."""
        return {t.name: read_value(self.memory, t) for t in compiled.outputs}


def _start(compiled: CompiledModel, inputs: Mapping[str, np.ndarray]) -> bytearray:
    image = initial_memory(compiled.program)
    memory = np.frombuffer(image, dtype=np.uint8)
    for placement in compiled.inputs:
        if placement.name not in inputs:
            raise SimulationError(f"no value for the model input {placement.name!r}")
        write_value(memory, placement, inputs[placement.name])
    return image


def run_compiled(
    compiled: CompiledModel,
    inputs: Mapping[str, np.ndarray],
    run_segment: SegmentRunner,
    *,
    after_run: Callable[[AcceleratorRun, np.ndarray], None] | None = None,
) -> ModelRun:
    """Run `compiled` on `inputs` step by step (module docstring)."""
    image = _start(compiled, inputs)
    memory = np.frombuffer(image, dtype=np.uint8)
    host_values: dict[str, np.ndarray] = {}
    runs: list[AcceleratorRun] = []
    for step in compiled.steps():
        if not isinstance(step, AcceleratorStep):
            run_host_step(step, compiled.program, memory, host_values, compiled.opsets)
            continue
        result = run_segment(step.program, image)
        image = result.memory if isinstance(result.memory, bytearray) else bytearray(result.memory)
        memory = np.frombuffer(image, dtype=np.uint8)
        run = AcceleratorRun(step, result.total_cycles, result.times, result.counters)
        runs.append(run)
        if after_run is not None:
            after_run(run, memory)
    return ModelRun(memory, host_values, tuple(runs))


def check_backend(backend: str) -> None:
    """Raise ConfigError unless `backend` names a `run_program` backend."""
    if backend not in BACKENDS:
        known = ", ".join(sorted(BACKENDS))
        raise ConfigError(f"unknown simulation backend {backend!r}: use one of {known}")


def _golden(program: Program, memory: bytearray) -> RunResult:
    run_golden(program, np.frombuffer(memory, dtype=np.uint8))
    return RunResult(memory=memory, total_cycles=0, times=(), counters={})


def segment_runner(
    backend: str, *, watchdog: int | None = None, vcd_files: Sequence[Path] = ()
) -> SegmentRunner:
    """Return the segment runner of `backend` (module docstring). For the `run_program`
    backends, `watchdog` limits each run and the i-th run writes its waveform to
    `vcd_files[i]` when given."""
    if backend == GOLDEN:
        return _golden
    done = 0

    def run(program: Program, memory: bytearray) -> RunResult:
        nonlocal done
        wave = vcd_files[done] if done < len(vcd_files) else None
        done += 1
        return run_program(program, memory, backend=backend, watchdog=watchdog, vcd=wave)

    return run


def simulate(
    compiled: CompiledModel,
    inputs: Mapping[str, np.ndarray],
    *,
    backend: str = GOLDEN,
    run_segment: SegmentRunner | None = None,
) -> dict[str, np.ndarray]:
    """Run `compiled` on `inputs` (exactly the model's inputs, by name) and return its
    outputs by name; accelerator steps run on `run_segment` (default: `segment_runner(backend)`),
    host steps on the reference operators."""
    expected = {t.name for t in compiled.inputs}
    if set(inputs) != expected:
        raise SimulationError(f"the model takes inputs {sorted(expected)}, not {sorted(inputs)}")
    run = run_compiled(compiled, inputs, run_segment or segment_runner(backend))
    return run.outputs(compiled)
