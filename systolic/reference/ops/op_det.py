"""Det: the determinant of square matrices."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold
from systolic.reference.ops.base import Op, TensorInfo


class Det(Op):
    """Det-11, -22: X (..., M, M) gives the determinants (...), computed in float64 and
    rounded once; float types only."""

    op_type = "Det"
    since_versions = (11, 22)

    def _shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise self.error(f"X {list(shape)} must end in a square matrix (..., M, M)")
        return shape[:-2]

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        return fold(self, inputs, [TensorInfo(x.dtype, self._shape(x.shape))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        self._shape(x.shape)
        return [np.asarray(np.linalg.det(x.astype(np.float64))).astype(x.dtype)]


OPS = (Det,)
