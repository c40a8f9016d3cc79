"""EyeLike: a 2-D tensor with ones on one diagonal, shaped like its input."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import FOLD_LIMIT, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class EyeLike(Op):
    """EyeLike-9, -22: ones on diagonal `k` (0 the main one, positive above it) of a tensor
    of the 2-D input's shape, zeros elsewhere; the element type is `dtype` (a TensorProto
    type number) or else the input's. The input's values are not read, so the output is a
    constant once the shape is known (folded up to FOLD_LIMIT elements)."""

    op_type = "EyeLike"
    since_versions = (9, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.k = int_attr(self, "k", 0)
        code = self.attr("dtype")
        try:
            self.dtype = None if code is None else DataType(int_attr(self, "dtype", 0))
        except ValueError:
            raise self.error(f"attribute 'dtype' = {code!r} is not an element type") from None

    def _type(self, given: DataType) -> DataType:
        dtype = self.dtype or given
        if not dtype.has_numpy or dtype == DataType.STRING:
            raise UnsupportedError(f"node {self.node_label!r} (ai.onnx.EyeLike:{self.version}): "
                                   f"element type {dtype.name} is not supported")
        return dtype

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        if len(x.shape) != 2:
            raise self.error(f"input must be 2-D, got shape {list(x.shape)}")
        dtype = self._type(x.dtype)
        small = x.size <= FOLD_LIMIT
        value = self._eye(x.shape, dtype) if small else None
        return [TensorInfo(dtype, x.shape, value)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        if x.ndim != 2:
            raise self.error(f"input must be 2-D, got shape {list(x.shape)}")
        return [self._eye(x.shape, self._type(DataType.from_numpy(x.dtype)))]

    def _eye(self, shape: tuple[int, ...], dtype: DataType) -> np.ndarray:
        rows, cols = shape
        return np.eye(rows, cols, k=self.k, dtype=dtype.numpy)


OPS = (EyeLike,)
