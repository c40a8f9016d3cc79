"""ScatterND: a copy of data with the slices addressed by the last axis of indices replaced
(or combined) by updates."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, str_attr
from systolic.reference.ops.base import Op, TensorInfo

_REDUCTIONS = {
    "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
}


class ScatterND(Op):
    """ScatterND-11, -13, -16 (reduction none/add/mul), -18 (max/min). With k =
    indices.shape[-1], updates has shape indices.shape[:-1] + data.shape[k:]; the updates are
    applied in index order (a repeated index without reduction: the last one wins, as
    onnxruntime). Negative indices count from the end; one out of range is a ModelError."""

    op_type = "ScatterND"
    since_versions = (11, 13, 16, 18)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.reduction = str_attr(self, "reduction", "none") if version >= 16 else "none"
        allowed = ("none", "add", "mul", "max", "min") if version >= 18 else ("none", "add",
                                                                               "mul")
        if self.reduction not in allowed:
            raise self.error(f"reduction {self.reduction!r} is not one of {', '.join(allowed)}")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        data, indices, updates = inputs
        assert data is not None and indices is not None and updates is not None
        if indices.dtype != DataType.INT64:
            raise self.error(f"indices must be int64, got {indices.dtype.short}")
        if updates.dtype != data.dtype:
            raise self.error(f"updates ({updates.dtype.short}) must have data's element type "
                             f"({data.dtype.short})")
        self._check(data.shape, indices.shape, updates.shape)
        return fold(self, inputs, [TensorInfo(data.dtype, data.shape)])

    def _check(self, data: tuple[int, ...], indices: tuple[int, ...],
               updates: tuple[int, ...]) -> int:
        if not indices or indices[-1] > len(data):
            raise self.error(f"indices of shape {list(indices)} must address at most the "
                             f"{len(data)} axes of data")
        depth = indices[-1]
        expected = (*indices[:-1], *data[depth:])
        if tuple(updates) != expected:
            raise self.error(f"updates have shape {list(updates)}, expected {list(expected)}")
        return depth

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        data, indices, updates = inputs
        assert data is not None and indices is not None and updates is not None
        depth = self._check(data.shape, indices.shape, updates.shape)
        out = np.array(data, copy=True)
        sizes = np.array(data.shape[:depth], np.int64)
        rows = indices.astype(np.int64).reshape(-1, depth)
        if rows.size and ((rows < -sizes).any() or (rows >= sizes).any()):
            raise self.error(f"an index is outside the data's axes {sizes.tolist()}")
        rows = np.where(rows < 0, rows + sizes, rows)
        parts = updates.reshape((rows.shape[0], *data.shape[depth:]))
        combine = _REDUCTIONS.get(self.reduction)
        for row, part in zip(rows, parts, strict=True):
            where = tuple(int(i) for i in row)
            out[where] = part if combine is None else combine(out[where], part)
        return [out]


OPS = (ScatterND,)
