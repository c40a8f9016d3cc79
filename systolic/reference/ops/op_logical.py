"""Logical operators on bool tensors: Not, And, Or, Xor.

And, Or and Xor take the `broadcast`/`axis` attributes before opset 7 and broadcast like
numpy from 7.
"""

from typing import ClassVar

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops.op_arithmetic import _Binary
from systolic.reference.ops.op_unary import _Unary

_BOOL = frozenset({DataType.BOOL})


class Not(_Unary):
    """Not-1: element-wise negation of a bool tensor."""

    op_type = "Not"
    since_versions = (1,)
    types: ClassVar[frozenset[DataType]] = _BOOL

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.logical_not(x))


class _Logical(_Binary):
    types: ClassVar[frozenset[DataType]] = _BOOL
    boolean_result = True


class And(_Logical):
    """And-1, -7."""

    op_type = "And"
    since_versions = (1, 7)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.logical_and(a, b))


class Or(_Logical):
    """Or-1, -7."""

    op_type = "Or"
    since_versions = (1, 7)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.logical_or(a, b))


class Xor(_Logical):
    """Xor-1, -7."""

    op_type = "Xor"
    since_versions = (1, 7)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.logical_xor(a, b))


OPS = (And, Not, Or, Xor)
