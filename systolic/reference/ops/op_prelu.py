"""PRelu: x where x >= 0, else slope * x, with a learned slope."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.ops._shared import NUMERIC_TYPES, broadcast_shape, check_type
from systolic.reference.ops.base import Op, TensorInfo


class PRelu(Op):
    """PRelu-1 (consumed_inputs ignored), -6, -7, -9 (integer types), -16.

    From opset 7 slope broadcasts to X one way (numpy rules, the result keeps X's shape);
    before 7 slope has X's shape, one element, or one element per channel (shape [C] for X of
    shape [N, C, ...], as exporters of that time emit it).
    """

    op_type = "PRelu"
    since_versions = (1, 6, 7, 9, 16)

    def _slope_shape(self, x: tuple[int, ...], slope: tuple[int, ...]) -> None:
        if self.version < 7:
            per_channel = len(x) >= 2 and slope == (x[1],)
            if slope != x and int(np.prod(slope, dtype=np.int64)) != 1 and not per_channel:
                raise self.error(f"slope {list(slope)} must have X's shape {list(x)}, one "
                                 "element or one per channel before opset 7")
            return
        if broadcast_shape(self, x, slope) != x:
            raise self.error(f"slope {list(slope)} does not broadcast to X {list(x)}")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, slope = inputs
        assert x is not None and slope is not None
        check_type(self, x, NUMERIC_TYPES, "X")
        if slope.dtype != x.dtype:
            raise self.error(f"X is {x.dtype.short} but slope is {slope.dtype.short}")
        self._slope_shape(x.shape, slope.shape)
        return [TensorInfo(x.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, slope = inputs
        assert x is not None and slope is not None
        if self.version < 7 and slope.shape != x.shape:
            one = slope.size == 1
            slope = slope.reshape(()) if one else slope.reshape((1, -1) + (1,) * (x.ndim - 2))
        return [np.where(x >= 0, x, x * slope).astype(x.dtype, copy=False)]


OPS = (PRelu,)
