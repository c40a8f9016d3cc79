"""Load a model and its inputs and run the mapper passes: the first step of `simulate` and
`compare`.

`prepare_model(model_path, input_path=..., seed=...)`:

1. loads the ONNX model (the importer's name warnings are always shown, once, never turned
   into errors);
2. reads the inputs (`inputs.load_inputs`: an .npy/.npz file, or a seeded random set); a
   model with symbolic or unknown input dimensions gets them fixed by the input arrays;
3. fixes the inputs that only select an If's branch (`selector_inputs`: silero-vad's sample
   rate) to their values in the graph the passes map, so the chosen branch is inlined;
4. runs the mapper passes: a float model is quantized, calibrated on the input arrays when
   they come from a file (which must then be finite), else on the passes' seeded random set;
   so are the float recurrent layers of a quantized model and the float parts between a
   dynamically quantized model's products (`PreparedModel.partly_float`).
"""

import dataclasses
import os
import warnings
from collections.abc import Mapping

import numpy as np

from systolic.ir import Model
from systolic.mapper.importer import (
    DEFAULT_MAX_TENSOR_BYTES,
    NameWarning,
    bind_inputs,
    load_model,
)
from systolic.mapper.passes.dynamic_island import quantizes_dynamic_island
from systolic.mapper.passes.float_island import quantizes_float_remnants
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.mapper.passes.unroll_recurrent import quantizes_float_recurrent
from systolic.simulation.inputs import check_calibration_inputs, load_inputs, model_inputs
from systolic.simulation.selector_inputs import describe, fix_selector_inputs

__all__ = ["PreparedModel", "prepare_model"]


@dataclasses.dataclass(frozen=True)
class PreparedModel:
    """A model after the passes: the model as loaded (input dimensions fixed), its integer
    graph, the inputs it runs on, and where they came from ("random seed N" or the file)."""

    original: Model
    integer: Model
    inputs: Mapping[str, np.ndarray]
    input_source: str

    @property
    def float_model(self) -> bool:
        """Whether the model as loaded was a float model (quantized by the passes)."""
        return not is_quantized(self.original)

    @property
    def partly_float(self) -> bool:
        """Whether the model is quantized but holds float recurrent layers that the passes
        quantize after training (`quantizes_float_recurrent`), float parts between its
        dynamic products (`quantizes_dynamic_island`) or float results read twice between
        DequantizeLinear and QuantizeLinear (`quantizes_float_remnants`): its results differ
        from the model as written by that quantization, as a float model's do."""
        return _partly_float(self.original)


def _partly_float(model: Model) -> bool:
    return (quantizes_float_recurrent(model) or quantizes_dynamic_island(model)
            or quantizes_float_remnants(model))


def _load(model_path: str | os.PathLike[str], max_tensor_bytes: int, weightless: bool) -> Model:
    with warnings.catch_warnings():
        warnings.simplefilter("always", NameWarning)
        return load_model(model_path, max_tensor_bytes=max_tensor_bytes, weightless=weightless)


def prepare_model(
    model_path: str | os.PathLike[str],
    *,
    input_path: str | os.PathLike[str] | None = None,
    seed: int = 0,
    max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES,
    weightless: bool = False,
) -> PreparedModel:
    """Load the model and its inputs and run the passes (module docstring);
    `max_tensor_bytes` is the importer's limit on any one tensor. `weightless` (for cycle
    counts only): float constants without data hold placeholder values (`load_model`)."""
    original = _load(model_path, max_tensor_bytes, weightless)
    inputs = load_inputs(original, input_path, seed=seed, max_bytes=max_tensor_bytes)
    if not all(info.type.is_static for info in model_inputs(original)):
        shapes = {name: tuple(array.shape) for name, array in inputs.items()}
        original = bind_inputs(original, shapes, max_tensor_bytes=max_tensor_bytes)
    mapped, fixed = fix_selector_inputs(original, inputs)
    calibration = None
    quantized_here = not is_quantized(original) or _partly_float(original)
    if quantized_here and input_path is not None:
        check_calibration_inputs(inputs, input_path)
        calibration = [{name: value for name, value in inputs.items() if name not in fixed}]
    integer, _ = run_passes(mapped, calibration=calibration, seed=seed)
    source = os.fspath(input_path) if input_path is not None else f"random seed {seed}"
    if fixed:
        source = f"{source}; {describe(fixed, inputs)}"
    return PreparedModel(original, integer, inputs, source)
