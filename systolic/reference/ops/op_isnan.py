"""IsNaN: a bool tensor, true where the float input is NaN."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold
from systolic.reference.ops.base import Op, TensorInfo


class IsNaN(Op):
    """IsNaN-9, -13, -20 (the later versions only widen the float types)."""

    op_type = "IsNaN"
    since_versions = (9, 13, 20)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        return fold(self, inputs, [TensorInfo(DataType.BOOL, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [np.asarray(np.isnan(x))]


OPS = (IsNaN,)
