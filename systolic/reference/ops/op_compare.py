"""Comparisons: Equal, Less, Greater, LessOrEqual, GreaterOrEqual, with a bool output.

Before opset 7 they take the `broadcast`/`axis` attributes; from 7 they broadcast like numpy.
Both inputs have one element type (numeric or, for Equal, bool).
"""

from typing import ClassVar

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops._shared import NUMERIC_TYPES
from systolic.reference.ops.op_arithmetic import _Binary


class _Comparison(_Binary):
    boolean_result = True


class Equal(_Comparison):
    """Equal-1, -7, -11 (floats), -13, -19 (strings, which the reference does not take)."""

    op_type = "Equal"
    since_versions = (1, 7, 11, 13, 19)
    types: ClassVar[frozenset[DataType]] = NUMERIC_TYPES | {DataType.BOOL}

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.equal(a, b))


class Less(_Comparison):
    """Less-1, -7, -9, -13."""

    op_type = "Less"
    since_versions = (1, 7, 9, 13)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.less(a, b))


class Greater(_Comparison):
    """Greater-1, -7, -9, -13."""

    op_type = "Greater"
    since_versions = (1, 7, 9, 13)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.greater(a, b))


class LessOrEqual(_Comparison):
    """LessOrEqual-12, -16."""

    op_type = "LessOrEqual"
    since_versions = (12, 16)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.less_equal(a, b))


class GreaterOrEqual(_Comparison):
    """GreaterOrEqual-12, -16."""

    op_type = "GreaterOrEqual"
    since_versions = (12, 16)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.greater_equal(a, b))


OPS = (Equal, Greater, GreaterOrEqual, Less, LessOrEqual)
