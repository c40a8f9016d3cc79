"""InstanceNormalization: normalise each channel of each sample over its spatial axes."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, float_attr
from systolic.reference.ops.base import Op, TensorInfo


class InstanceNormalization(Op):
    """InstanceNormalization-1 (consumed_inputs ignored), -6, -22: for X of shape
    [N, C, *spatial], y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], mean and biased
    variance over the spatial axes of each (n, c); epsilon 1e-5 by default. Computed in
    float64 and rounded once."""

    op_type = "InstanceNormalization"
    since_versions = (1, 6, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.epsilon = float_attr(self, "epsilon", 1e-5)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, scale, bias = inputs
        assert x is not None and scale is not None and bias is not None
        check_type(self, x, FLOAT_TYPES, "input")
        if len(x.shape) < 3:
            raise self.error(f"input must be [N, C, D1, ...] with a spatial axis, got "
                             f"{list(x.shape)}")
        for info, name in ((scale, "scale"), (bias, "B")):
            if info.dtype != x.dtype or info.shape != (x.shape[1],):
                raise self.error(f"{name} must be a 1-D {x.dtype.short} tensor of {x.shape[1]} "
                                 f"elements, got {info.dtype.short} {list(info.shape)}")
        return [TensorInfo(x.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, scale, bias = inputs
        assert x is not None and scale is not None and bias is not None
        axes = tuple(range(2, x.ndim))
        per_channel = (1, -1) + (1,) * len(axes)
        wide = x.astype(np.float64)
        centred = wide - wide.mean(axis=axes, keepdims=True)
        variance = (centred * centred).mean(axis=axes, keepdims=True)
        y = centred / np.sqrt(variance + self.epsilon) * scale.reshape(per_channel) \
            + bias.reshape(per_channel)
        return [y.astype(x.dtype)]


OPS = (InstanceNormalization,)
