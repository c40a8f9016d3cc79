"""Flatten: reshape to 2-D [prod(shape[:axis]), prod(shape[axis:])]."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import fold, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class Flatten(Op):
    """Flatten-1, -9, -11, -13, -21, -23; axis defaults to 1; a
    negative axis counts from the end in every version (exporters emit it before 11 too)."""

    op_type = "Flatten"
    since_versions = (1, 9, 11, 13, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", 1)

    def _shape(self, shape: tuple[int, ...]) -> tuple[int, int]:
        rank = len(shape)
        if not -rank <= self.axis <= rank:
            raise self.error(f"axis {self.axis} is out of range for a rank-{rank} input")
        axis = self.axis + rank if self.axis < 0 else self.axis
        return int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:],
                                                                       dtype=np.int64))

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        return fold(self, inputs, [TensorInfo(x.dtype, self._shape(x.shape))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [x.reshape(self._shape(x.shape))]


OPS = (Flatten,)
