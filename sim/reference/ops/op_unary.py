"""Element-wise unary math without attributes: Exp, Neg, Sigmoid, Sqrt, Tanh."""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from systolic.mapper.ir import DataType

from ..op import Op, TensorInfo
from ._shared import FLOAT_TYPES, NUMERIC_TYPES, check_type, fold


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = np.ones((), dtype=x.dtype)
    return np.asarray(one / (one + np.exp(-x)))


class _Unary(Op):
    """Computes `compute` in the input's type; overflow to inf and NaN from invalid
    arguments (sqrt of a negative) follow IEEE 754 as numpy gives them."""

    types: ClassVar[frozenset[DataType]] = FLOAT_TYPES

    def compute(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, self.types, "X")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        with np.errstate(over="ignore", invalid="ignore"):
            return [np.asarray(self.compute(x)).astype(x.dtype, copy=False)]


class Exp(_Unary):
    """Exp-1 (consumed_inputs ignored), -6, -13."""

    op_type = "Exp"
    since_versions = (1, 6, 13)
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.exp(x))


class Neg(_Unary):
    """Neg-1, -6, -13; signed integers wrap (-(-128) is -128 in int8)."""

    op_type = "Neg"
    since_versions = (1, 6, 13)
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.negative(x))
    types = NUMERIC_TYPES


class Sigmoid(_Unary):
    """Sigmoid-1, -6, -13: 1 / (1 + exp(-x))."""

    op_type = "Sigmoid"
    since_versions = (1, 6, 13)
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(_sigmoid(x))


class Sqrt(_Unary):
    """Sqrt-1, -6, -13; a negative input gives NaN."""

    op_type = "Sqrt"
    since_versions = (1, 6, 13)
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.sqrt(x))


class Tanh(_Unary):
    """Tanh-1, -6, -13."""

    op_type = "Tanh"
    since_versions = (1, 6, 13)
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.tanh(x))


OPS = (Exp, Neg, Sigmoid, Sqrt, Tanh)
