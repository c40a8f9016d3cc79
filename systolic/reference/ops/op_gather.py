"""Gather: take slices of data along `axis` at the given indices."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo

_INDEX_TYPES = (DataType.INT32, DataType.INT64)


class Gather(Op):
    """Gather-1, -11 (negative indices and axis count from the end), -13. Output shape is
    data.shape[:axis] + indices.shape + data.shape[axis + 1:]. An index out of range is a
    ModelError."""

    op_type = "Gather"
    since_versions = (1, 11, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", 0)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        data, indices = inputs
        assert data is not None and indices is not None
        if indices.dtype not in _INDEX_TYPES:
            raise self.error(f"indices must be int32 or int64, got {indices.dtype.short}")
        axis = normalize_axis(self, self.axis, len(data.shape))
        shape = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1:])
        return fold(self, inputs, [TensorInfo(data.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        data, indices = inputs
        assert data is not None and indices is not None
        axis = normalize_axis(self, self.axis, data.ndim)
        size = data.shape[axis]
        if indices.size and (indices.min() < -size or indices.max() >= size):
            raise self.error(f"an index is outside [-{size}, {size - 1}] on axis {axis}")
        return [np.take(data, indices.astype(np.int64), axis=axis)]


OPS = (Gather,)
