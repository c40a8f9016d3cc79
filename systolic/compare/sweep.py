"""Run one model over a grid of configurations: the work of `systolic compare MODEL`.

`prepare_model` loads the model and its inputs and runs the mapper passes once, as `systolic
simulate` does: symbolic input dimensions are fixed by the --input arrays; float models are
quantized, calibrated on the --input arrays when given (which must be finite), else on the
passes' seeded random set. `sweep` then compiles the integer graph for every
configuration and runs it on the backend (`layer_cycles`): the per-layer cycles, stalls and
utilization of each configuration (`ConfigResult`).
"""

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from systolic.compare.grid import config_label
from systolic.compare.layer_cycles import accelerator_runs, check_backend, layer_results
from systolic.compare.result import ConfigResult
from systolic.config import ArrayConfig
from systolic.ir import Graph, Model
from systolic.mapper.importer import bind_inputs, load_model
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.simulation.inputs import check_calibration_inputs, load_inputs, model_inputs

__all__ = ["PreparedModel", "prepare_model", "run_config", "sweep", "sweep_graph", "varying_fields"]

_FIELDS = (("array", ("rows", "cols")), ("dataflow", ("dataflow",)),
           ("spad_kib", ("spad_kib",)), ("acc_kib", ("acc_kib",)),
           ("bus_bytes", ("bus_bytes",)))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class PreparedModel:
    """A model after the passes: its integer graph and the inputs it runs on."""

    integer: Model
    inputs: Mapping[str, np.ndarray]
    input_source: str


def prepare_model(
    model_path: str | os.PathLike[str],
    *,
    input_path: str | os.PathLike[str] | None = None,
    seed: int = 0,
) -> PreparedModel:
    """Load the model and its inputs and run the mapper passes (module docstring)."""
    original = load_model(model_path)
    inputs = load_inputs(original, input_path, seed=seed)
    if not all(info.type.is_static for info in model_inputs(original)):
        # symbolic or unknown dimensions: the --input arrays fix them (as simulate does)
        shapes = {name: tuple(array.shape) for name, array in inputs.items()}
        original = bind_inputs(original, shapes)
    calibration = None
    if not is_quantized(original) and input_path is not None:
        check_calibration_inputs(inputs, input_path)
        calibration = [inputs]
    integer, _ = run_passes(original, calibration=calibration, seed=seed)
    source = os.fspath(input_path) if input_path is not None else f"random seed {seed}"
    return PreparedModel(integer, inputs, source)


def varying_fields(configs: Sequence[ArrayConfig]) -> list[str]:
    """Return the `config_label` fields whose value differs between `configs` (array size and
    dataflow when none does)."""
    varying = [
        name
        for name, attrs in _FIELDS
        if len({tuple(getattr(c, a) for a in attrs) for c in configs}) > 1
    ]
    return varying or ["array", "dataflow"]


def run_config(
    integer: Model | Graph,
    config: ArrayConfig,
    *,
    label: str,
    backend: str = "model",
    inputs: Mapping[str, np.ndarray] | None = None,
) -> ConfigResult:
    """Compile `integer` for `config`, run it on `backend` and return its results."""
    compiled = compile_model(integer, config)
    runs = accelerator_runs(compiled, backend, inputs or {})
    layers = tuple(layer_results(compiled, runs))
    return ConfigResult(config, label, layers, sum(run.total_cycles for run in runs))


def sweep_graph(
    integer: Model | Graph,
    inputs: Mapping[str, np.ndarray] | None,
    configs: Sequence[ArrayConfig],
    *,
    backend: str = "model",
    progress: Callable[[str], None] | None = None,
) -> list[ConfigResult]:
    """Return the results of compiling and running `integer` for every configuration, in
    order; `progress(label)` is called before each."""
    check_backend(backend)
    varying = varying_fields(configs)
    results = []
    for config in configs:
        label = config_label(config, varying)
        if progress is not None:
            progress(label)
        results.append(run_config(integer, config, label=label, backend=backend, inputs=inputs))
    return results


def sweep(
    prepared: PreparedModel,
    configs: Sequence[ArrayConfig],
    *,
    backend: str = "model",
    progress: Callable[[str], None] | None = None,
) -> list[ConfigResult]:
    """Return the results of every configuration for a prepared model (`sweep_graph`)."""
    return sweep_graph(prepared.integer, prepared.inputs, configs, backend=backend,
                       progress=progress)
