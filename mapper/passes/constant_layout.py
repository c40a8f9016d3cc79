"""Constants laid out without needless copies: repeated values as views, fast transposes.

The onnx wheel's light models hold their weights as ConstantOfShape nodes (VGG-19: 143 M
floats of 0.02); `fold_constants` folds each into a read-only broadcast view of its one
value instead of filling memory, and the passes that sweep weights (the finite check, the
weight quantization, the fused layers' transposes) work on one element per repeated axis
(`core`) and broadcast the result again (`spread`): every element is computed exactly as
from the filled array, so the integer graph is the same bit for bit.

A float product over a zero-stride operand is summed in another order than over a filled
one, so the reference executor never sees such a view: `filled` gives the model with each
of them filled in, which calibration runs.

`transposed_copy` lays a weight matrix out transposed in cache-sized blocks (3-4x faster
than `np.ascontiguousarray(w.T)` on VGG-19's fc6, same values).
"""

import dataclasses

import numpy as np

from systolic.ir import Model, Tensor

__all__ = ["c_contiguous", "core", "filled", "is_repeated", "spread", "transposed_copy"]

_BLOCK_ROWS = 256
"""Rows of the source matrix transposed at a time (the block fits the caches)."""


def is_repeated(value: np.ndarray) -> bool:
    """Return True when `value` repeats its values along some axis: an axis longer than 1
    of stride 0 (a view made by `np.broadcast_to`, as `spread` makes)."""
    return any(n > 1 and s == 0 for n, s in zip(value.shape, value.strides, strict=True))


def core(value: np.ndarray) -> np.ndarray:
    """Return the view of `value` keeping index 0 of each axis of stride 0 (length 1 there):
    the same values with every repetition removed (`value` itself when nothing repeats)."""
    if not is_repeated(value):
        return value
    return value[tuple(slice(0, 1) if s == 0 else slice(None) for s in value.strides)]


def spread(result: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Return `result` (computed on a `core`) as a read-only view of `shape`: the result of
    the filled array when the computation is element by element. A result that is not
    smaller than `shape` is returned as it is."""
    if result.shape == tuple(shape):
        return result
    return np.broadcast_to(result, shape)


def c_contiguous(value: np.ndarray) -> np.ndarray:
    """Return `value` C-contiguous (`np.asarray(value, order="C")`: a copy only when needed,
    a 0-D array stays 0-D), except a repeated value (`is_repeated`), which stays the view it
    is (no memory)."""
    return value if is_repeated(value) else np.asarray(value, order="C")


def transposed_copy(matrix: np.ndarray) -> np.ndarray:
    """Return the transpose of 2-D `matrix` as a new read-only C-contiguous array (a repeated
    value: its transposed view). Copied in blocks of _BLOCK_ROWS source rows."""
    if is_repeated(matrix):
        return matrix.T
    out = np.empty(matrix.shape[::-1], matrix.dtype)
    for start in range(0, matrix.shape[0], _BLOCK_ROWS):
        out[:, start : start + _BLOCK_ROWS] = matrix[start : start + _BLOCK_ROWS].T
    out.flags.writeable = False
    return out


def filled(model: Model) -> Model:
    """Return `model` with every repeated-value initializer filled into memory (the model
    itself when there is none): what the reference executor's float products need to sum
    as they do on any other constant."""
    graph = model.graph
    if not any(is_repeated(t.data) for t in graph.initializers):
        return model
    initializers = tuple(_filled(t) if is_repeated(t.data) else t for t in graph.initializers)
    return dataclasses.replace(model, graph=dataclasses.replace(graph,
                                                                initializers=initializers))


def _filled(constant: Tensor) -> Tensor:
    data = np.ascontiguousarray(constant.data)
    data.flags.writeable = False
    return Tensor(constant.name, constant.dtype, data)
