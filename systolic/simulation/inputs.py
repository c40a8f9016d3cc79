"""The inputs of a simulation: read from `.npy` / `.npz` files, or a seeded random set.

`load_inputs` is the only place that turns user files into the arrays a run uses, so every
problem (a missing input, a wrong name, shape or dtype) is one `ModelError` that names the
input and says what the model expects.
"""

import math
import os
import zipfile
from typing import IO

import numpy as np

from systolic.errors import ModelError, ResourceError
from systolic.ir import Model, TensorType, ValueInfo
from systolic.mapper.dim_binding import DEFAULT_MAX_TENSOR_BYTES

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


def _read_arrays(
    path: str | os.PathLike[str], model: Model, max_bytes: int
) -> dict[str, np.ndarray]:
    text = os.fspath(path)
    suffix = os.path.splitext(text)[1].lower()
    if suffix not in (".npy", ".npz"):
        raise ModelError(f"{text}: --input must be a .npy file (one input) or a .npz file by name")
    needed = {info.name: info for info in model_inputs(model)}
    if os.path.getsize(text) == 0:  # OSError (a missing file): the command line names it
        raise ModelError(f"{text} is empty: save the input arrays with numpy.save or numpy.savez")
    try:
        if suffix == ".npz":
            return _read_npz(text, needed, max_bytes)
        if len(needed) != 1:
            names = ", ".join(repr(name) for name in needed)
            raise ModelError(
                f"{text}: a .npy file holds one array but the model has {len(needed)} "
                f"inputs ({names}): pass a .npz with one array per input name"
            )
        (info,) = needed.values()
        with open(text, "rb") as handle:
            _check_header(handle, info, max_bytes, text)
        return {info.name: np.load(text, allow_pickle=False)}
    except (ValueError, EOFError, OSError, zipfile.BadZipFile) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ModelError(f"{text}: not a readable numpy file ({err})") from None


def _read_npz(text: str, needed: dict[str, ValueInfo], max_bytes: int) -> dict[str, np.ndarray]:
    """Check every member's header (name, shape, dtype, size) against the model's inputs
    before anything is decompressed, then load the arrays."""
    with zipfile.ZipFile(text) as archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        names = [m.filename.removesuffix(".npy") for m in members]
        _check_names(text, names, needed)
        for member, name in zip(members, names, strict=True):
            with archive.open(member) as handle:
                _check_header(handle, needed[name], max_bytes, f"{text}: array {name!r}")
    with np.load(text, allow_pickle=False) as loaded:
        return {name: loaded[name] for name in loaded.files}


def _check_names(text: str, names: list[str], needed: dict[str, ValueInfo]) -> None:
    extra = sorted(set(names) - set(needed))
    if extra:
        raise ModelError(
            f"{text}: {', '.join(repr(n) for n in extra)} "
            f"{'is not an input' if len(extra) == 1 else 'are not inputs'} of the model "
            f"(inputs: {', '.join(repr(n) for n in needed)})"
        )


def _check_header(handle: IO[bytes], info: ValueInfo, max_bytes: int, where: str) -> None:
    """Read a .npy header (the first bytes only) and check the array it declares against
    the input `info` and the memory limit, before its data is read."""
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
    else:
        raise ModelError(
            f"{where}: .npy format version {version[0]}.{version[1]} is not read; save the "
            "array with numpy.save"
        )
    if dtype.hasobject:
        raise ModelError(f"{where} holds Python objects, which are not read: save numbers")
    _check_shape(info.name, tuple(shape), info.type)
    size = math.prod(shape) * dtype.itemsize
    if size > max_bytes:
        raise ResourceError(
            f"{where} of shape {list(shape)} ({dtype}) needs {size} bytes, more than the limit "
            f"of {max_bytes}: raise the limit (--max-memory) or pass a smaller input"
        )


def _check_shape(name: str, shape: tuple[int, ...], expected: TensorType) -> None:
    if expected.shape is None:
        return
    fits = len(shape) == len(expected.shape) and all(
        not isinstance(want, int) or want == got
        for want, got in zip(expected.shape, shape, strict=True)
    )
    if not fits:
        raise ModelError(
            f"input {name!r} has shape {list(shape)}; the model expects {expected.text()}"
        )


def load_inputs(
    model: Model,
    path: str | os.PathLike[str] | None = None,
    *,
    seed: int = 0,
    max_bytes: int = DEFAULT_MAX_TENSOR_BYTES,
) -> dict[str, np.ndarray]:
    """Return the model's inputs: read from `path` (.npy for a one-input model, .npz with
    one array per input name), or seeded random ones (`random_inputs`) when `path` is None.

    Arrays are checked against the model's declared inputs: every input present, no extra
    names, the rank and every fixed dimension equal, and a dtype that converts without loss
    (a float64 array for a float input is accepted and converted; an integer array for a
    float input, or values outside an integer input's range, are refused). A file is checked
    by its headers before any array is read or decompressed: an empty file, a name that is
    not an input, a shape that does not fit, or an array over `max_bytes` (ResourceError) is
    refused without reading the data.
    """
    if path is None:
        return random_inputs(model, seed)
    arrays = _read_arrays(path, model, max_bytes)
    needed = {info.name: info for info in model_inputs(model)}
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
    _check_shape(name, array.shape, expected)
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
