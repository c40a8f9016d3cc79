"""GatherElements: pick data's entries along one axis at the positions an index tensor gives."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo

_INDEX_TYPES = (DataType.INT32, DataType.INT64)


class GatherElements(Op):
    """GatherElements-11, -13: output[i][j][k] = data[index[i][j][k]][j][k] for axis 0 (and
    likewise for the other axes); the output has the indices' shape, the data's element type.
    data and indices have the same rank and, off `axis`, indices is no larger than data.
    Negative indices count from the end; one out of range is a ModelError."""

    op_type = "GatherElements"
    since_versions = (11, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", 0)

    def _axis(self, data: tuple[int, ...], indices: tuple[int, ...]) -> int:
        if len(data) != len(indices) or not data:
            raise self.error(f"data {list(data)} and indices {list(indices)} must have the "
                             "same rank, at least 1")
        axis = normalize_axis(self, self.axis, len(data))
        if any(i > d for n, (i, d) in enumerate(zip(indices, data, strict=True)) if n != axis):
            raise self.error(f"indices {list(indices)} are larger than data {list(data)} "
                             f"off axis {axis}")
        return axis

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        data, indices = inputs
        assert data is not None and indices is not None
        if indices.dtype not in _INDEX_TYPES:
            raise self.error(f"indices must be int32 or int64, got {indices.dtype.short}")
        self._axis(data.shape, indices.shape)
        return fold(self, inputs, [TensorInfo(data.dtype, indices.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        data, indices = inputs
        assert data is not None and indices is not None
        axis = self._axis(data.shape, indices.shape)
        size = data.shape[axis]
        index = indices.astype(np.int64)
        if index.size and ((index < -size).any() or (index >= size).any()):
            raise self.error(f"an index is outside axis {axis} of size {size}")
        index = np.where(index < 0, index + size, index)
        window = data[tuple(slice(0, n) if a != axis else slice(None)
                            for a, n in enumerate(indices.shape))]
        return [np.take_along_axis(window, index, axis=axis)]


OPS = (GatherElements,)
