"""Run a model on the simulated accelerator and check it: the work of `systolic simulate`.

`simulate_model(model_path, config, ...)`:

1. loads the ONNX model and its inputs (`inputs.load_inputs`: a file, or a seeded random set);
2. runs the mapper passes (float models are quantized, calibrated on the given inputs or on
   the passes' seeded random set) and compiles the integer graph for `config`;
3. runs the program step by step: accelerator runs (the instructions between host layers,
   each ending in HALT) on the chosen backend (`systolic.sim.run.backends.run_program`),
   host layers with the reference operators on the same memory;
4. after each accelerator run compares every tensor its layers computed with the reference
   executor running the integer graph, bit for bit, stopping at the first difference
   (`bitexact`);
5. derives per-layer cycles and stalls from the per-instruction times (`layer_timing`);
6. compares the final outputs with onnxruntime running the *original* model file on the same
   inputs (when onnxruntime is installed and `compare_onnxruntime`) and explains a difference
   (`onnxruntime_explain`), and for float models with the float model run by the reference
   executor (`quantization`).

It returns the `SimulationReport` and the model's final outputs (in the model's own output
types); it writes nothing except the temporary VCD files a `PendingFiles` hands out.
"""

import dataclasses
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.isa.program import LayerUnit, ProgramLayer
from systolic.mapper.importer import (
    DEFAULT_MAX_TENSOR_BYTES,
    NameWarning,
    bind_inputs,
    load_model,
)
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compiled import (
    AcceleratorStep,
    CompiledModel,
    read_value,
    run_host_step,
    write_value,
)
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.reference.executor import run_model
from systolic.sim.progress import watching
from systolic.sim.run.backends import BACKENDS, run_program
from systolic.simulation.bitexact import compare_final_outputs, compare_layer, reference_values
from systolic.simulation.inputs import check_calibration_inputs, load_inputs, model_inputs
from systolic.simulation.layer_timing import (
    RunTimes,
    ideal_array_cycles,
    layer_timings,
    program_units,
)
from systolic.simulation.onnxruntime_check import onnxruntime_available, run_onnxruntime
from systolic.simulation.onnxruntime_explain import onnxruntime_checks
from systolic.simulation.outputs import PendingFiles
from systolic.simulation.progress import ProgressBar
from systolic.simulation.quantization import quantization_accuracy
from systolic.simulation.report import (
    LayerResult,
    Mismatch,
    OnnxruntimeExplanation,
    SimulationReport,
)

__all__ = ["SimulationOutcome", "simulate_model", "vcd_paths"]

RTL_BACKENDS = ("rtl",)
"""Backends that can write a VCD waveform."""

CYCLE_REPORTING = ("rtl", "verilator")
"""Backends that report their progress in cycles (`systolic.sim.progress.report_cycle`)."""


@dataclasses.dataclass(frozen=True)
class SimulationOutcome:
    """The report and the model's final outputs by name (the model's own output types)."""

    report: SimulationReport
    outputs: dict[str, np.ndarray]


def vcd_paths(path: str | os.PathLike[str], runs: int) -> list[Path]:
    """Return the VCD file of each accelerator run: `path` itself for one run, else
    `NAME-1.vcd`, `NAME-2.vcd`, ... beside it (the runs are separated by host layers)."""
    target = Path(path)
    if runs == 1:
        return [target]
    return [target.with_name(f"{target.stem}-{i}{target.suffix}") for i in range(1, runs + 1)]


def _unit_name(layer: ProgramLayer) -> str:
    if layer.unit is LayerUnit.ARRAY:
        return "array"
    if layer.unit is LayerUnit.HOST:
        return "host"
    return "vector"  # the vector datapath, and layout ops (COPY, or addressing alone)


def _note(layer: ProgramLayer) -> str:
    if layer.unit is LayerUnit.LAYOUT:
        return f"layout: {layer.reason}" if layer.reason else "layout"
    return layer.reason if layer.unit is LayerUnit.HOST else ""


def _expected_cycles(compiled: CompiledModel) -> int:
    from systolic.sim.timing.program_model import ProgramModel

    model = ProgramModel(compiled.config)
    return sum(
        model.run(step.program.instructions).total_cycles
        for step in compiled.steps()
        if isinstance(step, AcceleratorStep)
    )


def _padded_image(compiled: CompiledModel) -> bytearray:
    image = compiled.memory_image()
    bus = compiled.config.bus_bytes
    image.extend(bytes(-len(image) % bus))
    return image


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
    progress: Callable[[int | Callable[[], int], str], ProgressBar] | None = None,
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
    if backend not in BACKENDS:
        known = ", ".join(sorted(BACKENDS))
        raise ConfigError(f"unknown simulation backend {backend!r}: use one of {known}")
    if vcd is not None and backend not in RTL_BACKENDS:
        raise ConfigError(
            f"--vcd needs the rtl backend (waveforms come from the Amaranth simulator), not "
            f"{backend!r}: add --backend rtl or drop --vcd"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("always", NameWarning)
        original = load_model(model_path, max_tensor_bytes=max_tensor_bytes)
    inputs = load_inputs(original, input_path, seed=seed)
    if not all(info.type.is_static for info in model_inputs(original)):
        # symbolic or unknown dimensions: the --input arrays fix them
        shapes = {name: tuple(array.shape) for name, array in inputs.items()}
        original = bind_inputs(original, shapes, max_tensor_bytes=max_tensor_bytes)
    float_model = not is_quantized(original)
    calibration = None
    if float_model and input_path is not None:
        check_calibration_inputs(inputs, input_path)
        calibration = [inputs]
    integer, _ = run_passes(original, calibration=calibration, seed=seed)
    make_bar = progress or (lambda total, text: ProgressBar(total, text))
    compile_bar = make_bar(len(integer.graph.nodes), "compiling layers")
    try:
        compiled = compile_model(integer, config,
                                 progress=lambda done, _: compile_bar.update(done))
    finally:
        compile_bar.close()
    reference = reference_values(compiled, inputs)
    theirs = None  # onnxruntime first: a model it cannot run fails before the long part
    if compare_onnxruntime and onnxruntime_available():
        theirs = run_onnxruntime(model_path, inputs)

    steps = list(compiled.steps())
    accelerator_steps = [s for s in steps if isinstance(s, AcceleratorStep)]
    vcd_files: list[Path] = []
    if vcd is not None:
        pending = files if files is not None else PendingFiles()
        vcd_files = [pending.temporary(p) for p in vcd_paths(vcd, len(accelerator_steps))]
    by_cycles = backend in CYCLE_REPORTING  # else the bar counts accelerator runs
    total: int | Callable[[], int] = (
        (lambda: _expected_cycles(compiled)) if by_cycles else len(accelerator_steps)
    )
    bar = make_bar(total, f"{backend} {'cycles' if by_cycles else 'runs'}")

    image = _padded_image(compiled)
    memory = np.frombuffer(image, dtype=np.uint8)
    for placement in compiled.inputs:
        write_value(memory, placement, inputs[placement.name])
    host_values: dict[str, np.ndarray] = {}
    runs: list[RunTimes] = []
    counters: list[dict[str, object]] = []
    mismatch: Mismatch | None = None
    checked = 0
    layers = compiled.layers
    done_cycles = 0
    try:
        for step in steps:
            if not isinstance(step, AcceleratorStep):
                run_host_step(step, compiled.program, memory, host_values, compiled.opsets)
                continue
            wave = vcd_files[len(runs)] if vcd_files else None

            def show(cycle: int, offset: int = done_cycles) -> None:
                bar.update(offset + cycle)

            with watching(show):
                result = run_program(step.program, image, backend=backend,
                                     watchdog=watchdog, vcd=wave)  # fmt: skip
            done_cycles += result.total_cycles
            bar.update(done_cycles if by_cycles else len(runs) + 1)
            image = bytearray(result.memory)
            memory = np.frombuffer(image, dtype=np.uint8)
            runs.append(RunTimes(step.first, result.times, result.total_cycles))
            counters.append({"first_instruction": step.first,
                             "instructions": len(step.program.instructions),
                             "total_cycles": result.total_cycles,
                             "counters": dict(result.counters)})  # fmt: skip
            end = step.first + len(step.program.instructions) - 1
            while mismatch is None and checked < len(layers) and layers[checked].first < end:
                layer = layers[checked]
                if layer.unit is not LayerUnit.HOST:
                    mismatch = compare_layer(compiled, layer, memory, reference)
                checked += 1
    finally:
        bar.close()
    for layer in layers[checked:]:
        if mismatch is None and layer.unit is not LayerUnit.HOST:
            mismatch = compare_layer(compiled, layer, memory, reference)

    declared = {info.name: info.type for info in original.graph.outputs}
    outputs: dict[str, np.ndarray] = {}
    for placement in compiled.outputs:
        value = read_value(memory, placement)
        kind = declared.get(placement.name)
        if kind is not None and kind.dtype.has_numpy:
            value = value.astype(kind.dtype.numpy)
        outputs[placement.name] = value
    if mismatch is None:
        mismatch = compare_final_outputs(compiled, outputs, reference)

    timings = layer_timings(layers, program_units(compiled.program), runs)
    results = []
    for layer, timing in zip(layers, timings, strict=True):
        array = layer.unit is LayerUnit.ARRAY
        results.append(LayerResult(
            name=layer.name, op=layer.op, unit=_unit_name(layer), macs=layer.macs,
            cycles=timing.cycles,
            ideal_cycles=ideal_array_cycles(layer.macs, config) if array else 0,
            stall_cycles=timing.stall_cycles, note=_note(layer), active_cycles=timing.active,
        ))  # fmt: skip

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
        input_source=os.fspath(input_path) if input_path is not None else f"random seed {seed}",
        layers=results,
        mismatch=mismatch,
        onnxruntime=ort,
        onnxruntime_explanation=explanation,
        quantization=quantization,
        runs=counters,
    )
    return SimulationOutcome(report, outputs)
