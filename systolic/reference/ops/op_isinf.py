"""IsInf: which elements are infinite."""

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._float_predicate import FloatPredicate
from systolic.reference.ops._shared import int_attr


class IsInf(FloatPredicate):
    """IsInf-10, -20 (more float types): a bool tensor of X's shape, true where X is +inf
    (when `detect_positive`, default 1) or -inf (when `detect_negative`, default 1)."""

    op_type = "IsInf"
    since_versions = (10, 20)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.positive = int_attr(self, "detect_positive", 1) != 0
        self.negative = int_attr(self, "detect_negative", 1) != 0

    def holds(self, x: np.ndarray) -> np.ndarray:
        hit = np.zeros(x.shape, np.bool_)
        if self.positive:
            hit |= np.isposinf(x)
        if self.negative:
            hit |= np.isneginf(x)
        return hit


OPS = (IsInf,)
