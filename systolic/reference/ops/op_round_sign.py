"""Round (half to even) and Sign, element-wise."""

import numpy as np

from systolic.reference.ops._shared import NUMERIC_TYPES
from systolic.reference.ops.op_unary import _Unary


class Round(_Unary):
    """Round-11, -22: to the nearest integer, halves to the even one (numpy's rint); floats
    only."""

    op_type = "Round"
    since_versions = (11, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.rint(x))


class Sign(_Unary):
    """Sign-9, -13: -1, 0 or 1 in the input's type (NaN stays NaN); any numeric type."""

    op_type = "Sign"
    since_versions = (9, 13)
    types = NUMERIC_TYPES

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.sign(x))


OPS = (Round, Sign)
