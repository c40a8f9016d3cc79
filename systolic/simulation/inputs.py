"""The inputs of a simulation: read from `.npy` / `.npz` files, or a seeded random set.

`load_inputs` is the only place that turns user files into the arrays a run uses, so every
problem (a missing input, a wrong name, shape or dtype) is one `ModelError` that names the
input and says what the model expects.
"""

import os
import zipfile

import numpy as np

from systolic.errors import ModelError
from systolic.ir import Model, TensorType, ValueInfo

__all__ = ["check_calibration_inputs", "load_inputs", "model_inputs", "random_inputs"]


def model_inputs(model: Model) -> tuple[ValueInfo, ...]:
    """Return the graph inputs the caller must supply (initializers listed as inputs excluded)."""
    constants = {t.name for t in model.graph.initializers}
    return tuple(info for info in model.graph.inputs if info.name not in constants)


def _fixed_shape(info: ValueInfo) -> tuple[int, ...]:
    shape = info.type.shape
    if shape is None or not info.type.is_static:
        raise ModelError(
            f"input {info.name!r} has no fixed shape ({info.type.text()}): pass --input "
            f"with an array for it, which fixes its shape"
        )
    return tuple(int(d) for d in shape)  # type: ignore[arg-type]


def random_inputs(model: Model, seed: int = 0) -> dict[str, np.ndarray]:
    """Return a seeded random array for every input: standard normal for float inputs, the
    whole value range for integer ones (uniform), False/True for bool."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for info in model_inputs(model):
        shape = _fixed_shape(info)
        dtype = _numpy_dtype(info.type)
        if dtype.kind == "f":
            arrays[info.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            limits = np.iinfo(dtype)
            low, high = max(int(limits.min), -128), min(int(limits.max), 255)
            arrays[info.name] = rng.integers(low, high, size=shape, endpoint=True).astype(dtype)
        elif dtype.kind == "b":
            arrays[info.name] = rng.integers(0, 1, size=shape, endpoint=True).astype(bool)
        else:
            raise ModelError(
                f"input {info.name!r} is {info.type.text()}: random values of this type are not "
                f"made; pass it with --input"
            )
    return arrays


def _numpy_dtype(tensor_type: TensorType) -> np.dtype:
    if not tensor_type.dtype.has_numpy:
        raise ModelError(f"inputs of type {tensor_type.text()} are not supported")
    return tensor_type.dtype.numpy


def _read_arrays(path: str | os.PathLike[str], model: Model) -> dict[str, np.ndarray]:
    text = os.fspath(path)
    suffix = os.path.splitext(text)[1].lower()
    needed = model_inputs(model)
    try:
        if suffix == ".npz":
            with np.load(text, allow_pickle=False) as archive:
                return {name: archive[name] for name in archive.files}
        if suffix == ".npy":
            array = np.load(text, allow_pickle=False)
            if len(needed) != 1:
                names = ", ".join(repr(i.name) for i in needed)
                raise ModelError(
                    f"{text}: a .npy file holds one array but the model has {len(needed)} "
                    f"inputs ({names}): pass a .npz with one array per input name"
                )
            return {needed[0].name: array}
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ModelError(f"{text}: not a readable numpy file ({err})") from None
    raise ModelError(f"{text}: --input must be a .npy file (one input) or a .npz file by name")


def load_inputs(
    model: Model, path: str | os.PathLike[str] | None = None, *, seed: int = 0
) -> dict[str, np.ndarray]:
    """Return the model's inputs: read from `path` (.npy for a one-input model, .npz with
    one array per input name), or seeded random ones (`random_inputs`) when `path` is None.

    Arrays are checked against the model's declared inputs: every input present, no extra
    names, the rank and every fixed dimension equal, and a dtype that converts without loss
    (a float64 array for a float input is accepted and converted; an integer array for a
    float input, or values outside an integer input's range, are refused).
    """
    if path is None:
        return random_inputs(model, seed)
    arrays = _read_arrays(path, model)
    needed = {info.name: info for info in model_inputs(model)}
    extra = sorted(set(arrays) - set(needed))
    if extra:
        raise ModelError(
            f"{os.fspath(path)}: {', '.join(repr(n) for n in extra)} "
            f"{'is not an input' if len(extra) == 1 else 'are not inputs'} of the model "
            f"(inputs: {', '.join(repr(n) for n in needed)})"
        )
    result: dict[str, np.ndarray] = {}
    for name, info in needed.items():
        if name not in arrays:
            raise ModelError(
                f"{os.fspath(path)} has no array named {name!r}: the model needs "
                f"{', '.join(repr(n) for n in needed)}"
            )
        result[name] = _convert(name, arrays[name], info.type)
    return result


def _convert(name: str, array: np.ndarray, expected: TensorType) -> np.ndarray:
    dtype = _numpy_dtype(expected)
    if expected.shape is not None:
        fits = array.ndim == len(expected.shape) and all(
            not isinstance(want, int) or want == got
            for want, got in zip(expected.shape, array.shape, strict=True)
        )
        if not fits:
            raise ModelError(
                f"input {name!r} has shape {list(array.shape)}; the model expects "
                f"{expected.text()}"
            )
    if array.dtype == dtype:
        return array
    if dtype.kind == "f" and array.dtype.kind == "f":
        return array.astype(dtype)
    if dtype.kind in "iu" and array.dtype.kind in "iu":
        limits = np.iinfo(dtype)
        if array.size and (array.min() < limits.min or array.max() > limits.max):
            raise ModelError(
                f"input {name!r} has values outside {dtype} "
                f"({int(limits.min)}..{int(limits.max)}), the type the model expects"
            )
        return array.astype(dtype)
    raise ModelError(
        f"input {name!r} has dtype {array.dtype}; the model expects {dtype} "
        f"({expected.text()}): convert the array"
    )


def check_calibration_inputs(
    arrays: dict[str, np.ndarray], path: str | os.PathLike[str]
) -> None:
    """Refuse float arrays holding NaN or infinite values as calibration data: a float model
    is quantized with value ranges measured on them, which need finite values."""
    for name, array in arrays.items():
        if array.dtype.kind != "f":
            continue
        bad = int(np.count_nonzero(~np.isfinite(array)))
        if bad:
            raise ModelError(
                f"{os.fspath(path)}: input {name!r} holds {bad} NaN or infinite value(s) of "
                f"{array.size}: a float model is quantized on ranges calibrated on --input, "
                f"which must be finite; replace them"
            )
