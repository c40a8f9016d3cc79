"""Run a model on the simulated accelerator and check it: the work of `systolic simulate`.

`simulate_model(model_path, config, ...)`:

1. loads the ONNX model and its inputs and runs the mapper passes (`prepare.prepare_model`:
   float models are quantized, calibrated on the given inputs or on the passes' seeded random
   set) and compiles the integer graph for `config`;
2. runs the program step by step with the model runner (`runner.run_compiled`): accelerator
   runs (the instructions between host layers, each ending in HALT) on the chosen backend
   (`systolic.sim.run.backends.run_program`), host layers with the reference operators on the
   same memory;
3. after each accelerator run compares every tensor its layers computed with the reference
   executor running the integer graph, bit for bit, keeping the first difference
   (`layer_check.LayerComparison`);
4. derives the per-layer rows (cycles, stalls) from the per-instruction times (`layer_rows`)
   and names the engine of the `model` backend (`engine`);
5. compares the final outputs with onnxruntime running the *original* model file on the same
   inputs (when onnxruntime is installed and `compare_onnxruntime`) and explains a difference
   (`onnxruntime_explain`), and for float models with the float model run by the reference
   executor (`quantization`).

It returns the `SimulationReport` and the model's final outputs (in the model's own output
types); it writes nothing except the temporary VCD files a `PendingFiles` hands out.
"""

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.ir import Model
from systolic.isa.program import Program
from systolic.mapper.importer import DEFAULT_MAX_TENSOR_BYTES
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compiled import AcceleratorStep, CompiledModel
from systolic.reference.executor import run_model
from systolic.sim.progress import watching
from systolic.sim.result import RunResult
from systolic.sim.timing.layer_cycles import layer_cycles
from systolic.simulation.engine import engine_name
from systolic.simulation.layer_check import LayerComparison, reference_values
from systolic.simulation.layer_rows import layer_rows
from systolic.simulation.layer_timing import RunTimes
from systolic.simulation.onnxruntime_check import onnxruntime_available, run_onnxruntime
from systolic.simulation.onnxruntime_explain import onnxruntime_checks
from systolic.simulation.outputs import PendingFiles
from systolic.simulation.prepare import prepare_model
from systolic.simulation.progress import ProgressBar
from systolic.simulation.quantization import quantization_accuracy
from systolic.simulation.report import OnnxruntimeExplanation, SimulationReport
from systolic.simulation.runner import (
    ModelRun,
    SegmentRunner,
    check_backend,
    run_compiled,
    segment_runner,
)

__all__ = ["SimulationOutcome", "simulate_model", "vcd_paths"]

RTL_BACKENDS = ("rtl",)
"""Backends that can write a VCD waveform."""

CYCLE_REPORTING = ("rtl", "verilator")
"""Backends that report their progress in cycles (`systolic.sim.progress.report_cycle`)."""


@dataclasses.dataclass(frozen=True)
class SimulationOutcome:
    """The report and the model's final outputs by name (the model's own output types); the
    compiled model and its accelerator runs' times (for `systolic.simulation.trace`)."""

    report: SimulationReport
    outputs: dict[str, np.ndarray]
    compiled: CompiledModel | None = None
    run_times: tuple[RunTimes, ...] = ()


def vcd_paths(path: str | os.PathLike[str], runs: int) -> list[Path]:
    """Return the VCD file of each accelerator run: `path` itself for one run, else
    `NAME-1.vcd`, `NAME-2.vcd`, ... beside it (the runs are separated by host layers)."""
    target = Path(path)
    if runs == 1:
        return [target]
    return [target.with_name(f"{target.stem}-{i}{target.suffix}") for i in range(1, runs + 1)]


def _expected_cycles(compiled: CompiledModel) -> int:
    from systolic.sim.timing.program_model import ProgramModel

    model = ProgramModel(compiled.config)
    return sum(
        model.run(step.program.instructions).total_cycles
        for step in compiled.steps()
        if isinstance(step, AcceleratorStep)
    )


ProgressMaker = Callable[[int | Callable[[], int], str], ProgressBar]
"""Makes a progress bar from (total: an int or a function computing it, label)."""


def _check_options(backend: str, vcd: str | os.PathLike[str] | None) -> None:
    check_backend(backend)
    if vcd is not None and backend not in RTL_BACKENDS:
        raise ConfigError(
            f"--vcd needs the rtl backend (waveforms come from the Amaranth simulator), not "
            f"{backend!r}: add --backend rtl or drop --vcd"
        )


def _compile(integer: Model, config: ArrayConfig, make_bar: ProgressMaker) -> CompiledModel:
    bar = make_bar(len(integer.graph.nodes), "compiling layers")
    try:
        return compile_model(integer, config, progress=lambda done, _: bar.update(done),
                             layer_cycles=layer_cycles)
    finally:
        bar.close()


def _vcd_files(
    compiled: CompiledModel, vcd: str | os.PathLike[str] | None, files: PendingFiles | None
) -> list[Path]:
    """Return the temporary file of each accelerator run's waveform (none without `vcd`)."""
    if vcd is None:
        return []
    pending = files if files is not None else PendingFiles()
    return [pending.temporary(p) for p in vcd_paths(vcd, compiled.accelerator_run_count)]


def _with_progress(run_segment: SegmentRunner, bar: ProgressBar, by_cycles: bool) -> SegmentRunner:
    """Return `run_segment` showing on `bar` the cycles done (those a backend reports during a
    run, `systolic.sim.progress`, and each finished run's total) or the runs done."""
    cycles = runs = 0

    def run(program: Program, memory: bytearray) -> RunResult:
        nonlocal cycles, runs
        offset = cycles
        with watching(lambda cycle: bar.update(offset + cycle)):
            result = run_segment(program, memory)
        cycles, runs = cycles + result.total_cycles, runs + 1
        bar.update(cycles if by_cycles else runs)
        return result

    return run


def _run(
    compiled: CompiledModel,
    inputs: Mapping[str, np.ndarray],
    run_segment: SegmentRunner,
    make_bar: ProgressMaker,
    comparison: LayerComparison,
    backend: str,
) -> ModelRun:
    """Run the model with a progress bar, comparing its layers as their runs finish."""
    by_cycles = backend in CYCLE_REPORTING  # else the bar counts accelerator runs
    total: Callable[[], int] = (
        (lambda: _expected_cycles(compiled)) if by_cycles
        else (lambda: compiled.accelerator_run_count)
    )  # fmt: skip
    bar = make_bar(total, f"{backend} {'cycles' if by_cycles else 'runs'}")
    try:
        return run_compiled(compiled, inputs, _with_progress(run_segment, bar, by_cycles),
                            after_run=comparison.after_run)  # fmt: skip
    finally:
        bar.close()


def _typed_outputs(outputs: Mapping[str, np.ndarray], original: Model) -> dict[str, np.ndarray]:
    """Return the outputs in the model's own declared output types."""
    declared = {info.name: info.type for info in original.graph.outputs}
    typed = {}
    for name, value in outputs.items():
        kind = declared.get(name)
        typed[name] = value.astype(kind.dtype.numpy) if kind and kind.dtype.has_numpy else value
    return typed


def simulate_model(
    model_path: str | os.PathLike[str],
    config: ArrayConfig,
    *,
    label: str | None = None,
    backend: str = "rtl",
    input_path: str | os.PathLike[str] | None = None,
    seed: int = 0,
    vcd: str | os.PathLike[str] | None = None,
    files: PendingFiles | None = None,
    compare_onnxruntime: bool = True,
    watchdog: int | None = None,
    progress: ProgressMaker | None = None,
    max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES,
) -> SimulationOutcome:
    """Simulate and check the model at `model_path` (module docstring).

    `label` names the model in the report (default: the path). `vcd` (rtl backend only)
    writes each accelerator run's waveform through `files` (see `vcd_paths`). `progress`
    makes a progress bar from (total: an int or a function computing it, label); default:
    `ProgressBar` on standard error.
    `max_tensor_bytes` is the importer's limit on any one tensor. The importer's name
    warnings are always shown (once), never turned into errors.
    """
    _check_options(backend, vcd)
    make_bar = progress or ProgressBar
    prepared = prepare_model(model_path, input_path=input_path, seed=seed,
                             max_tensor_bytes=max_tensor_bytes)  # fmt: skip
    original, integer, inputs = prepared.original, prepared.integer, prepared.inputs
    float_model = prepared.float_model or prepared.partly_float  # quantized by the passes
    compiled = _compile(integer, config, make_bar)
    reference = reference_values(compiled, inputs)
    theirs = None  # onnxruntime first: a model it cannot run fails before the long part
    if compare_onnxruntime and onnxruntime_available():
        theirs = run_onnxruntime(model_path, inputs)
    comparison = LayerComparison(compiled, reference)
    run_segment = segment_runner(backend, watchdog=watchdog,
                                 vcd_files=_vcd_files(compiled, vcd, files))  # fmt: skip
    run = _run(compiled, inputs, run_segment, make_bar, comparison, backend)
    outputs = _typed_outputs(run.outputs(compiled), original)
    mismatch = comparison.finish(run.memory, outputs)

    ort: dict[str, float] | None = None
    explanation: OnnxruntimeExplanation | None = None
    if theirs is not None:
        ort, explanation = onnxruntime_checks(model_path, original, integer, inputs, outputs,
                                              theirs, quantized=not float_model)  # fmt: skip
    quantization = None
    if float_model:
        quantization = quantization_accuracy(outputs, run_model(original, inputs))

    report = SimulationReport(
        model=label or os.fspath(model_path),
        backend=backend,
        config=config.to_dict(),
        inputs={
            name: {"shape": list(v.shape), "dtype": str(v.dtype)} for name, v in inputs.items()
        },
        input_source=prepared.input_source,
        layers=layer_rows(compiled, run.run_times()),
        mismatch=mismatch,
        onnxruntime=ort,
        onnxruntime_explanation=explanation,
        quantization=quantization,
        runs=[accelerator_run.to_json() for accelerator_run in run.runs],
        engine=engine_name(backend),
    )
    return SimulationOutcome(report, outputs, compiled, tuple(run.run_times()))
