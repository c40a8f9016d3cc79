"""Densify an ONNX `SparseTensorProto` (sparse initializers and attributes) into a Tensor."""

import math
from collections.abc import Callable

import numpy as np

from systolic.errors import ModelError, ResourceError
from systolic.ir import Tensor
from systolic.proto import SparseTensorProto, TensorProto
from systolic.proto.onnx_tensors import element_bytes

__all__ = ["densify"]


def densify(
    proto: SparseTensorProto,
    where: str,
    max_bytes: int,
    convert: Callable[[TensorProto, str], Tensor],
) -> Tensor:
    """Return the dense tensor a sparse one stands for (zeros where no value is given).

    `indices` are either linear ([NNZ]) or per-dimension ([NNZ, rank]) as the IR allows;
    `convert` decodes the values and indices TensorProtos.
    """
    shape = tuple(int(d) for d in proto.dims)
    if any(d < 0 for d in shape):
        raise ModelError(f"{where} has a negative dimension in {list(shape)}")
    values = convert(proto.values, f"{where} values")
    size = math.prod(shape) * element_bytes(values.dtype)
    if size > max_bytes:
        raise ResourceError(
            f"{where} of shape {list(shape)} needs {size} bytes when densified, more than the "
            f"limit of {max_bytes}: raise the limit (--max-memory)"
        )
    if values.data.ndim != 1:
        raise ModelError(f"{where}: values must be one-dimensional, got shape {list(values.shape)}")
    count = values.data.shape[0]
    dense = np.zeros(math.prod(shape), dtype=values.data.dtype)
    if count:
        indices = convert(proto.indices, f"{where} indices").data.astype(np.int64)
        linear = _linear_indices(indices, shape, count, where)
        dense[linear] = values.data
    dense.flags.writeable = False  # frozen in place: the Tensor need not copy it
    return Tensor(proto.values.name, values.dtype, dense.reshape(shape))


def _linear_indices(
    indices: np.ndarray, shape: tuple[int, ...], count: int, where: str
) -> np.ndarray:
    total = math.prod(shape)
    if indices.shape == (count,):
        linear = indices
    elif indices.shape == (count, len(shape)):
        if np.any(indices < 0) or np.any(indices >= np.array(shape, dtype=np.int64)):
            raise ModelError(f"{where}: an index is outside shape {list(shape)}")
        linear = (
            np.ravel_multi_index(tuple(indices.T), shape) if shape else np.zeros(count, np.int64)
        )
    else:
        raise ModelError(
            f"{where}: indices of shape {list(indices.shape)} fit neither [{count}] nor "
            f"[{count}, {len(shape)}]"
        )
    if np.any(linear < 0) or np.any(linear >= total):
        raise ModelError(f"{where}: an index is outside shape {list(shape)}")
    if len(np.unique(linear)) != count:
        raise ModelError(f"{where}: an index is given twice")
    return linear
