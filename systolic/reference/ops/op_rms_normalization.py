"""RMSNormalization: divide by the root mean square over the trailing axes, then scale."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import (
    FLOAT_TYPES,
    broadcast_shape,
    check_type,
    float_attr,
    fold,
    int_attr,
    normalize_axis,
)
from systolic.reference.ops.base import Op, TensorInfo


class RMSNormalization(Op):
    """RMSNormalization-23 (LLaMA-style layers): y = x / sqrt(mean(x² over axes axis..-1)
    + epsilon) * scale, `axis` default -1, epsilon 1e-5; scale broadcasts to X's shape.
    Statistics in float64 whatever `stash_type` (1 or 0; it names their precision), result
    rounded once to X's type; float types only."""

    op_type = "RMSNormalization"
    since_versions = (23,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", -1)
        self.epsilon = float_attr(self, "epsilon", 1e-5)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, scale = inputs
        assert x is not None and scale is not None
        check_type(self, x, FLOAT_TYPES, "X")
        check_type(self, scale, FLOAT_TYPES, "scale")
        normalize_axis(self, self.axis, len(x.shape))
        if broadcast_shape(self, x.shape, scale.shape) != x.shape:
            raise self.error(f"scale {list(scale.shape)} must broadcast to X {list(x.shape)}")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, scale = inputs
        assert x is not None and scale is not None
        axis = normalize_axis(self, self.axis, x.ndim)
        wide = x.astype(np.float64)
        mean_square = (wide * wide).mean(axis=tuple(range(axis, x.ndim)), keepdims=True)
        out = wide / np.sqrt(mean_square + self.epsilon) * scale.astype(np.float64)
        return [out.astype(x.dtype)]


OPS = (RMSNormalization,)
