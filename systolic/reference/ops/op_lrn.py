"""LRN: local response normalisation across channels."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, float_attr, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class LRN(Op):
    """LRN-1, -13: y = x / (bias + alpha / size * sum of x^2 over channels
    [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]) ** beta, computed in float32
    (float64 for float64 inputs)."""

    op_type = "LRN"
    since_versions = (1, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if "size" not in attrs:
            raise self.error("required attribute 'size' is missing")
        self.size = int_attr(self, "size", 1)
        if self.size < 1:
            raise self.error(f"size must be positive, got {self.size}")
        self.alpha = float_attr(self, "alpha", 1e-4)
        self.beta = float_attr(self, "beta", 0.75)
        self.bias = float_attr(self, "bias", 1.0)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        if len(x.shape) < 2:
            raise self.error(f"X must be [N, C, ...], got {list(x.shape)}")
        return [TensorInfo(x.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        acc = np.float64 if x.dtype == np.float64 else np.float32
        squares = np.square(x.astype(acc))
        before, after = (self.size - 1) // 2, self.size - 1 - (self.size - 1) // 2
        widths = [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2)
        cumulative = np.cumsum(np.pad(squares, widths), axis=1, dtype=np.float64)
        cumulative = np.concatenate([np.zeros_like(cumulative[:, :1]), cumulative], axis=1)
        channels = x.shape[1]
        sums = cumulative[:, self.size : self.size + channels] - cumulative[:, :channels]
        scale = (self.bias + self.alpha / self.size * sums) ** self.beta
        return [(x.astype(acc) / scale.astype(acc)).astype(x.dtype)]


OPS = (LRN,)
