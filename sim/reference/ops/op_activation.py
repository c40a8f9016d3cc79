"""Activations with attributes: LeakyRelu, HardSigmoid, HardSwish."""

from collections.abc import Sequence

import numpy as np
from systolic.mapper.ir import Attrs

from ..op import Op, TensorInfo
from ._shared import FLOAT_TYPES, check_type, float_attr, fold


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


OPS = (HardSigmoid, HardSwish, LeakyRelu)
