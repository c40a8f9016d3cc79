"""Where: choose elements of X or Y by a bool condition, broadcasting all three."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops._shared import NUMERIC_TYPES, broadcast_shape, check_type, fold
from systolic.reference.ops.base import Op, TensorInfo


class Where(Op):
    """Where-9, -16 (more element types): X where condition, else Y; numpy broadcasting."""

    op_type = "Where"
    since_versions = (9, 16)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        cond, x, y = inputs
        assert cond is not None and x is not None and y is not None
        check_type(self, cond, frozenset({DataType.BOOL}), "condition")
        check_type(self, x, NUMERIC_TYPES | {DataType.BOOL}, "X")
        if x.dtype != y.dtype:
            raise self.error(f"X is {x.dtype.short} but Y is {y.dtype.short}; they must match")
        shape = broadcast_shape(self, cond.shape, x.shape, y.shape)
        return fold(self, inputs, [TensorInfo(x.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        cond, x, y = inputs
        assert cond is not None and x is not None and y is not None
        return [np.where(cond, x, y).astype(x.dtype, copy=False)]


OPS = (Where,)
