"""Shape and Size: the input's shape as a 1-D int64 tensor and its element count as an int64
scalar (both known before running)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import int_attr
from systolic.reference.ops.base import Op, TensorInfo


class Shape(Op):
    """Shape-1, -13, -15 (start and end select a slice of the dimensions, clamped like
    Python slices), -19, -21, -23."""

    op_type = "Shape"
    since_versions = (1, 13, 15, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if version < 15 and ("start" in attrs or "end" in attrs):
            raise self.error("start and end need Shape-15 or later")
        self.start = int_attr(self, "start", 0)
        end = self.attr("end")
        self.end = None if end is None else int_attr(self, "end", 0)

    def _dims(self, shape: Sequence[int]) -> np.ndarray:
        return np.array(tuple(shape)[self.start : self.end], dtype=np.int64)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        dims = self._dims(x.shape)
        return [TensorInfo(DataType.INT64, dims.shape, dims)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [self._dims(x.shape)]


class Size(Op):
    """Size-1, -13, -19, -21, -23: the number of elements of the input, an int64 scalar."""

    op_type = "Size"
    since_versions = (1, 13, 19, 21, 23)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        return [TensorInfo(DataType.INT64, (), np.array(x.size, dtype=np.int64))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [np.array(x.size, dtype=np.int64)]


OPS = (Shape, Size)
