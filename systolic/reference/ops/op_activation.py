"""Activations of one input: LeakyRelu, HardSigmoid, HardSwish, Elu, Selu, Softplus, Mish,
Gelu. The transcendental ones are computed in float64 and rounded once to X's type."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.kernels.special import erf
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, float_attr, fold, str_attr
from systolic.reference.ops.base import Op, TensorInfo


class _Activation(Op):
    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def compute(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [self.compute(x).astype(x.dtype, copy=False)]


class LeakyRelu(_Activation):
    """LeakyRelu-1, -6, -16: x if x >= 0 else alpha * x (alpha defaults to 0.01)."""

    op_type = "LeakyRelu"
    since_versions = (1, 6, 16)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = float_attr(self, "alpha", 0.01)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.where(x >= 0, x, x * np.asarray(self.alpha, dtype=x.dtype))


class HardSigmoid(_Activation):
    """HardSigmoid-1, -6, -22: max(0, min(1, alpha * x + beta)), alpha 0.2 and beta 0.5 by
    default."""

    op_type = "HardSigmoid"
    since_versions = (1, 6, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = float_attr(self, "alpha", 0.2)
        self.beta = float_attr(self, "beta", 0.5)

    def compute(self, x: np.ndarray) -> np.ndarray:
        alpha, beta = np.asarray(self.alpha, x.dtype), np.asarray(self.beta, x.dtype)
        return np.asarray(np.clip(x * alpha + beta, 0, 1))


class HardSwish(_Activation):
    """HardSwish-14, -22: x * max(0, min(1, x / 6 + 1 / 2))."""

    op_type = "HardSwish"
    since_versions = (14, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        alpha, beta = np.asarray(1 / 6, x.dtype), np.asarray(0.5, x.dtype)
        return np.asarray(x * np.clip(x * alpha + beta, 0, 1))


class Elu(_Activation):
    """Elu-1 (consumed_inputs ignored), -6, -22: x if x >= 0 else alpha * (exp(x) - 1),
    alpha 1 by default."""

    op_type = "Elu"
    since_versions = (1, 6, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = float_attr(self, "alpha", 1.0)

    def compute(self, x: np.ndarray) -> np.ndarray:
        wide = x.astype(np.float64)
        return np.where(wide >= 0, wide, self.alpha * np.expm1(np.minimum(wide, 0)))


class Selu(_Activation):
    """Selu-1 (consumed_inputs ignored), -6, -22: gamma * (x if x > 0 else alpha * (exp(x) -
    1)), with the float32 defaults alpha 1.6732632 and gamma 1.0507010."""

    op_type = "Selu"
    since_versions = (1, 6, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = float_attr(self, "alpha", 1.67326319217681884765625)
        self.gamma = float_attr(self, "gamma", 1.05070102214813232421875)

    def compute(self, x: np.ndarray) -> np.ndarray:
        wide = x.astype(np.float64)
        negative = self.alpha * np.expm1(np.minimum(wide, 0))
        return self.gamma * np.where(wide > 0, wide, negative)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.logaddexp(0.0, x))


class Softplus(_Activation):
    """Softplus-1, -22: ln(exp(x) + 1), without overflow for large x."""

    op_type = "Softplus"
    since_versions = (1, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return _softplus(x.astype(np.float64))


class Mish(_Activation):
    """Mish-18, -22: x * tanh(softplus(x))."""

    op_type = "Mish"
    since_versions = (18, 22)

    def compute(self, x: np.ndarray) -> np.ndarray:
        wide = x.astype(np.float64)
        return np.asarray(wide * np.tanh(_softplus(wide)))


class Gelu(_Activation):
    """Gelu-20: x / 2 * (1 + erf(x / sqrt(2))), or with approximate="tanh"
    x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x**3)))."""

    op_type = "Gelu"
    since_versions = (20,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.approximate = str_attr(self, "approximate", "none")
        if self.approximate not in ("none", "tanh"):
            raise self.error(f"approximate {self.approximate!r} is not supported; use 'none' "
                             "or 'tanh'")

    def compute(self, x: np.ndarray) -> np.ndarray:
        wide = x.astype(np.float64)
        if self.approximate == "tanh":
            inner = np.sqrt(2 / np.pi) * (wide + 0.044715 * wide**3)
            return np.asarray(0.5 * wide * (1 + np.tanh(inner)))
        return np.asarray(0.5 * wide * (1 + erf(wide / np.sqrt(2))))


OPS = (Elu, Gelu, HardSigmoid, HardSwish, LeakyRelu, Mish, Selu, Softplus)
