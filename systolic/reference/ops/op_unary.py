"""Element-wise unary math without attributes: Abs, Ceil, Cos, Erf, Exp, Floor, Log, Neg,
Reciprocal, Sigmoid, Sin, Sqrt, Tanh."""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import DataType
from systolic.reference.kernels.special import erf
from systolic.reference.ops._shared import FLOAT_TYPES, NUMERIC_TYPES, check_type, fold
from systolic.reference.ops.base import Op, TensorInfo


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


class Abs(_Unary):
    """Abs-1 (consumed_inputs ignored), -6, -13; signed integers wrap (|-128| is -128 in
    int8)."""

    op_type = "Abs"
    since_versions = (1, 6, 13)
    types = NUMERIC_TYPES

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.abs(x))


class Ceil(_Unary):
    """Ceil-1, -6, -13."""

    op_type = "Ceil"
    since_versions = (1, 6, 13)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.ceil(x))


class Cos(_Unary):
    """Cos-7, -22."""

    op_type = "Cos"
    since_versions = (7, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.cos(x))


class Erf(_Unary):
    """Erf-9, -13: the error function, computed in float64 and rounded to X's type."""

    op_type = "Erf"
    since_versions = (9, 13)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return erf(x)


class Exp(_Unary):
    """Exp-1 (consumed_inputs ignored), -6, -13."""

    op_type = "Exp"
    since_versions = (1, 6, 13)
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.exp(x))


class Floor(_Unary):
    """Floor-1, -6, -13."""

    op_type = "Floor"
    since_versions = (1, 6, 13)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.floor(x))


class Log(_Unary):
    """Log-1, -6, -13; log(0) is -inf and a negative input gives NaN."""

    op_type = "Log"
    since_versions = (1, 6, 13)

    def compute(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.asarray(np.log(x))


class Neg(_Unary):
    """Neg-1, -6, -13; signed integers wrap (-(-128) is -128 in int8)."""

    op_type = "Neg"
    since_versions = (1, 6, 13)
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.negative(x))
    types = NUMERIC_TYPES


class Reciprocal(_Unary):
    """Reciprocal-1, -6, -13: 1 / x (1 / 0 is inf)."""

    op_type = "Reciprocal"
    since_versions = (1, 6, 13)

    def compute(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.asarray(np.reciprocal(x))


class Sigmoid(_Unary):
    """Sigmoid-1, -6, -13: 1 / (1 + exp(-x))."""

    op_type = "Sigmoid"
    since_versions = (1, 6, 13)
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(_sigmoid(x))


class Sin(_Unary):
    """Sin-7, -22."""

    op_type = "Sin"
    since_versions = (7, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.sin(x))


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


OPS = (Abs, Ceil, Cos, Erf, Exp, Floor, Log, Neg, Reciprocal, Sigmoid, Sin, Sqrt, Tanh)
