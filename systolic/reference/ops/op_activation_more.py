"""More activations of one input: Softsign, Celu, ThresholdedRelu, Shrink (each a fixed
function of one element, computed in X's type)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import NUMERIC_TYPES, check_type, float_attr, fold
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_activation import _Activation


class Softsign(_Activation):
    """Softsign-1, -22: x / (1 + |x|)."""

    op_type = "Softsign"
    since_versions = (1, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x / (np.ones((), x.dtype) + np.abs(x)))


class Celu(_Activation):
    """Celu-12: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), alpha 1.0 by default
    (nonzero), computed in float64 and rounded once; float32 only, as the spec says."""

    op_type = "Celu"
    since_versions = (12,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = float_attr(self, "alpha", 1.0)
        if self.alpha == 0:
            raise self.error("attribute 'alpha' must be nonzero")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, frozenset({DataType.FLOAT}), "X")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def compute(self, x: np.ndarray) -> np.ndarray:
        wide = x.astype(np.float64)
        with np.errstate(over="ignore"):
            neg = self.alpha * np.expm1(np.minimum(wide, 0.0) / self.alpha)
        return np.asarray(np.maximum(wide, 0.0) + np.minimum(neg, 0.0))


class ThresholdedRelu(_Activation):
    """ThresholdedRelu-10, -22: x where x > alpha, else 0 (alpha 1.0 by default)."""

    op_type = "ThresholdedRelu"
    since_versions = (10, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = float_attr(self, "alpha", 1.0)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.where(x > np.asarray(self.alpha, x.dtype), x, 0))


class Shrink(_Activation):
    """Shrink-9: x - bias where x > lambd, x + bias where x < -lambd, else 0 (lambd 0.5,
    bias 0 by default); any numeric type, computed in X's type (integers wrap)."""

    op_type = "Shrink"
    since_versions = (9,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.lambd = float_attr(self, "lambd", 0.5)
        self.bias = float_attr(self, "bias", 0.0)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, NUMERIC_TYPES, "input")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def compute(self, x: np.ndarray) -> np.ndarray:
        bias = np.asarray(self.bias).astype(x.dtype)
        with np.errstate(over="ignore"):
            return np.asarray(np.where(x < -self.lambd, x + bias,
                                       np.where(x > self.lambd, x - bias, 0)))


OPS = (Celu, Shrink, Softsign, ThresholdedRelu)
