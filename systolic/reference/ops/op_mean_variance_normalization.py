"""MeanVarianceNormalization: zero mean and unit variance over some axes."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold, ints_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo

_EPSILON = 1e-9
"""Added to the standard deviation, as the operator's ONNX function body does."""


class MeanVarianceNormalization(Op):
    """MeanVarianceNormalization-9, -13: (x - mean) / (sqrt(E[x²] - mean²) + 1e-9) with the
    statistics over `axes` (default [0, 2, 3]), computed in float64 and rounded once; float
    types only."""

    op_type = "MeanVarianceNormalization"
    since_versions = (9, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axes = ints_attr(self, "axes") or (0, 2, 3)

    def _axes(self, rank: int) -> tuple[int, ...]:
        return tuple(sorted({normalize_axis(self, a, rank) for a in self.axes}))

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        self._axes(len(x.shape))
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        axes = self._axes(x.ndim)
        wide = x.astype(np.float64)
        mean = wide.mean(axis=axes, keepdims=True)
        variance = (wide * wide).mean(axis=axes, keepdims=True) - mean * mean
        with np.errstate(invalid="ignore"):
            std = np.sqrt(variance)
        return [((wide - mean) / (std + _EPSILON)).astype(x.dtype)]


OPS = (MeanVarianceNormalization,)
