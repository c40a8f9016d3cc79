"""Concat: join inputs along one axis."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import fold, int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class Concat(Op):
    """Concat-1 (axis defaults to 1), -4 (axis required), -11, -13. A
    negative axis counts from the end in every version (exporters emit it before 11 too)."""

    op_type = "Concat"
    since_versions = (1, 4, 11, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if version >= 4 and "axis" not in attrs:
            raise self.error("required attribute 'axis' is missing")
        self.axis = int_attr(self, "axis", 1)

    def _shape(self, shapes: list[tuple[int, ...]]) -> tuple[tuple[int, ...], int]:
        if not shapes:
            raise self.error("needs at least one input")
        rank = len(shapes[0])
        axis = normalize_axis(self, self.axis, rank)
        for s in shapes:
            if len(s) != rank or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]:
                raise self.error(f"input shapes {[list(t) for t in shapes]} differ outside "
                                 f"axis {self.axis}")
        total = sum(s[axis] for s in shapes)
        return (*shapes[0][:axis], total, *shapes[0][axis + 1:]), axis

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        given = [x for x in inputs if x is not None]
        if any(x.dtype != given[0].dtype for x in given):
            raise self.error("all inputs must have the same element type")
        shape, _ = self._shape([x.shape for x in given])
        return fold(self, inputs, [TensorInfo(given[0].dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        given = [x for x in inputs if x is not None]
        _, axis = self._shape([x.shape for x in given])
        return [np.concatenate(given, axis=axis)]


OPS = (Concat,)
