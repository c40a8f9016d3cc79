"""com.microsoft QLinearGlobalAveragePool: quantized mean over all spatial positions."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import check_per_tensor_io, zero_point_value
from systolic.reference.ops._shared import int_attr
from systolic.reference.ops.base import Op, TensorInfo

IMAGE_SIZE_LIMIT = 2**24
"""onnxruntime refuses images of 2**24 positions or more (the count must be exact in float32)."""


class QLinearGlobalAveragePool(Op):
    """com.microsoft QLinearGlobalAveragePool-1, uint8 or int8, NCHW or (channels_last=1)
    NHWC, any number of spatial axes.

    Per image and channel: acc = sum(x) - x_zero_point * S over the S spatial positions,
    exact in int32; y = saturate(round_half_to_even(float32(acc) * M) + y_zero_point) with
    M = float32(x_scale / float32(y_scale * float32(S))): onnxruntime's arithmetic
    (MlasQLinearGlobalAveragePool), bit for bit. The output keeps the rank with spatial
    sizes 1: [N, C, 1, ...] or [N, 1, ..., C].
    """

    domain = "com.microsoft"
    op_type = "QLinearGlobalAveragePool"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.channels_last = bool(int_attr(self, "channels_last", 0))

    def _spatial_axes(self, rank: int) -> tuple[int, ...]:
        if rank < 3:
            raise self.error(f"X must have a batch, a channel and at least one spatial axis, "
                             f"got rank {rank}")
        return tuple(range(1, rank - 1)) if self.channels_last else tuple(range(2, rank))

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, x_scale, x_zp, y_scale, y_zp = inputs
        assert x is not None and x_scale is not None and y_scale is not None
        check_per_tensor_io(self, x, x_scale, x_zp, y_scale, y_zp, prefixes=("x", "y"))
        axes = self._spatial_axes(len(x.shape))
        if int(np.prod([x.shape[a] for a in axes])) >= IMAGE_SIZE_LIMIT:
            raise self.error("the image has 2**24 positions or more; the count must be exact "
                             "in float32")
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        return [TensorInfo(x.dtype, shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, x_scale, x_zp, y_scale, y_zp = inputs
        assert x is not None and x_scale is not None and y_scale is not None
        axes = self._spatial_axes(x.ndim)
        size = int(np.prod([x.shape[a] for a in axes]))
        acc = x.astype(np.int64).sum(axis=axes, keepdims=True) - zero_point_value(x_zp) * size
        multiplier = np.float32(x_scale.reshape(())) / (
            np.float32(y_scale.reshape(())) * np.float32(size))
        return [quant.requantize(acc, multiplier, zero_point_value(y_zp), x.dtype)]


OPS = (QLinearGlobalAveragePool,)
