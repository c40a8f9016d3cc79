"""IsInf: which elements are infinite."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class IsInf(Op):
    """IsInf-10, -20 (more float types): a bool tensor of X's shape, true where X is +inf
    (when `detect_positive`, default 1) or -inf (when `detect_negative`, default 1)."""

    op_type = "IsInf"
    since_versions = (10, 20)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.positive = int_attr(self, "detect_positive", 1) != 0
        self.negative = int_attr(self, "detect_negative", 1) != 0

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        return fold(self, inputs, [TensorInfo(DataType.BOOL, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        hit = np.zeros(x.shape, np.bool_)
        if self.positive:
            hit |= np.isposinf(x)
        if self.negative:
            hit |= np.isneginf(x)
        return [hit]


OPS = (IsInf,)
