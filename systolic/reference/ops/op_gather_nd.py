"""GatherND: take slices of data addressed by the last axis of an index tensor."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, int_attr
from systolic.reference.ops.base import Op, TensorInfo

_INDEX_TYPES = (DataType.INT64,)


class GatherND(Op):
    """GatherND-11, -12 (batch_dims), -13. With b = batch_dims and q = rank(indices), the
    output shape is indices.shape[:-1] + data.shape[b + indices.shape[-1]:]; each index tuple
    addresses data within its batch. Negative indices count from the end; one out of range is
    a ModelError."""

    op_type = "GatherND"
    since_versions = (11, 12, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.batch_dims = int_attr(self, "batch_dims", 0) if version >= 12 else 0

    def _check(self, data: tuple[int, ...], indices: tuple[int, ...]) -> int:
        b = self.batch_dims
        if not indices or b < 0 or b >= min(len(data), len(indices)):
            raise self.error(f"batch_dims {b} must be below the ranks of data ({len(data)}) "
                             f"and indices ({len(indices)})")
        if data[:b] != indices[:b]:
            raise self.error(f"the first {b} dimensions of data {list(data)} and indices "
                             f"{list(indices)} must be equal")
        depth = indices[-1]
        if depth > len(data) - b:
            raise self.error(f"indices address {depth} axes but data has {len(data) - b} "
                             f"after batch_dims")
        return depth

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        data, indices = inputs
        assert data is not None and indices is not None
        if indices.dtype not in _INDEX_TYPES:
            raise self.error(f"indices must be int64, got {indices.dtype.short}")
        depth = self._check(data.shape, indices.shape)
        shape = (*indices.shape[:-1], *data.shape[self.batch_dims + depth:])
        return fold(self, inputs, [TensorInfo(data.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        data, indices = inputs
        assert data is not None and indices is not None
        depth = self._check(data.shape, indices.shape)
        b = self.batch_dims
        batch = int(np.prod(data.shape[:b], dtype=np.int64))
        flat_data = data.reshape((batch, *data.shape[b:]))
        flat_idx = indices.astype(np.int64).reshape((batch, -1, depth))
        sizes = np.array(data.shape[b:b + depth], np.int64)
        if flat_idx.size and ((flat_idx < -sizes).any() or (flat_idx >= sizes).any()):
            raise self.error(f"an index is outside the data's axes {sizes.tolist()}")
        flat_idx = np.where(flat_idx < 0, flat_idx + sizes, flat_idx)
        slices = [
            [flat_data[(n, *tuple(row))] for row in flat_idx[n]] for n in range(batch)
        ]
        tail = data.shape[b + depth:]
        out = np.array(slices, dtype=data.dtype).reshape((*indices.shape[:-1], *tail))
        return [out]


OPS = (GatherND,)
