"""ScatterElements: write (or reduce) updates into a copy of data at per-element indices."""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, int_attr, normalize_axis, str_attr
from systolic.reference.ops.base import Op, TensorInfo

_INDEX_TYPES = (DataType.INT32, DataType.INT64)
_REDUCTIONS = {
    "add": np.add.at, "mul": np.multiply.at, "max": np.maximum.at, "min": np.minimum.at,
}
_SINCE = {"none": 11, "add": 16, "mul": 16, "max": 18, "min": 18}


class ScatterElements(Op):
    """ScatterElements-11, -13 (more types), -16 (`reduction` none/add/mul), -18 (max/min).
    With r = rank, output = data, then for every position p of indices (which has the shape
    of updates and rank r): output[p with p[axis] replaced by indices[p]] = updates[p], or
    combined with it by the reduction. Negative indices count from the end; one out of
    range is a ModelError. With reduction "none" and a repeated index the last update (in
    row-major order) wins, which ONNX leaves undefined."""

    op_type = "ScatterElements"
    since_versions: ClassVar[tuple[int, ...]] = (11, 13, 16, 18)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", 0)
        new = version >= 16 and self.op_type == "ScatterElements"
        self.reduction = str_attr(self, "reduction", "none") if new else "none"
        if self.reduction != "none" and _SINCE.get(self.reduction, 99) > version:
            raise self.error(f"reduction {self.reduction!r} is not one of this version's "
                             f"({', '.join(r for r, v in _SINCE.items() if v <= version)})")

    def _check(self, data: tuple[int, ...], indices: tuple[int, ...],
               updates: tuple[int, ...]) -> int:
        if indices != updates or len(indices) != len(data):
            raise self.error(f"indices {list(indices)} and updates {list(updates)} must have "
                             f"one shape, of data's rank {len(data)}")
        axis = normalize_axis(self, self.axis, len(data))
        if any(i > d for k, (i, d) in enumerate(zip(indices, data, strict=True)) if k != axis):
            raise self.error(f"indices {list(indices)} exceed data {list(data)} off the axis")
        return axis

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        data, indices, updates = inputs
        assert data is not None and indices is not None and updates is not None
        if indices.dtype not in _INDEX_TYPES:
            raise self.error(f"indices must be int32 or int64, got {indices.dtype.short}")
        if updates.dtype != data.dtype:
            raise self.error(f"updates ({updates.dtype.short}) must have data's type "
                             f"({data.dtype.short})")
        self._check(data.shape, indices.shape, updates.shape)
        return fold(self, inputs, [TensorInfo(data.dtype, data.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        data, indices, updates = inputs
        assert data is not None and indices is not None and updates is not None
        axis = self._check(data.shape, indices.shape, updates.shape)
        size = data.shape[axis]
        where = indices.astype(np.int64)
        if where.size and ((where < -size).any() or (where >= size).any()):
            raise self.error(f"an index is outside [-{size}, {size}) along axis {axis}")
        position: list[np.ndarray] = list(np.indices(indices.shape, sparse=True))
        position[axis] = np.where(where < 0, where + size, where)
        out = data.copy()
        if self.reduction == "none":
            out[tuple(position)] = updates
        else:
            _REDUCTIONS[self.reduction](out, tuple(position), updates)
        return [out]


class Scatter(ScatterElements):
    """Scatter-9, -11 (ONNX's schema of opset 11 marks it deprecated for ScatterElements):
    ScatterElements-11's semantics (no reduction), kept for older exports."""

    op_type = "Scatter"
    since_versions = (9, 11)


OPS = (Scatter, ScatterElements)
