"""Expand: broadcast the input to a shape (both ways, like numpy)."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.ops._shared import broadcast_shape, fold, ints_of, known_ints
from systolic.reference.ops.base import Op, TensorInfo


class Expand(Op):
    """Expand-8, -13: the output shape is the numpy broadcast of the input's shape and the
    shape input, so a 1 in the shape input keeps the input's dimension."""

    op_type = "Expand"
    since_versions = (8, 13)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, shape_info = inputs
        assert x is not None
        shape = known_ints(self, shape_info, "the shape input")
        assert shape is not None
        return fold(self, inputs, [TensorInfo(x.dtype, broadcast_shape(self, x.shape, shape))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, shape_in = inputs
        assert x is not None
        shape = ints_of(shape_in)
        assert shape is not None
        return [np.broadcast_to(x, broadcast_shape(self, x.shape, shape)).copy()]


OPS = (Expand,)
