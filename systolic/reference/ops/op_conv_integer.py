"""ConvInteger: int32 convolution of zero-point-corrected uint8/int8 inputs."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.kernels.conv import conv_nd, conv_output_shape
from systolic.reference.ops._quantized import (
    check_per_tensor,
    check_quantized,
    check_vector_or_scalar,
)
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_conv import Conv


def output_channel_offsets(zero_point: np.ndarray | None, rank: int) -> np.ndarray | int:
    """Return a weight zero point shaped to subtract from w [M, C/group, *kernel]: per tensor,
    or per output channel ([M] -> [M, 1, 1, ...])."""
    if zero_point is None:
        return 0
    z = zero_point.astype(np.int64)
    return int(z.reshape(())) if z.size == 1 else z.reshape((-1,) + (1,) * (rank - 1))


def integer_conv(op: Conv, x: np.ndarray, x_offset: int, w: np.ndarray,
                 w_offset: np.ndarray | int) -> np.ndarray:
    """Return the int32 convolution of (x - x_offset) with (w - w_offset), exact and wrapped
    to 32 bits; the padding is zeros of the corrected input (the zero point itself)."""
    _, strides, pads, dilations = op.geometry(x.shape, w.shape)
    return conv_nd(x.astype(np.int32) - np.int32(x_offset),
                   w.astype(np.int32) - np.asarray(w_offset, dtype=np.int32),
                   strides=strides, pads=pads, dilations=dilations, group=op.group,
                   acc_dtype=np.int32)


class ConvInteger(Conv):
    """ConvInteger-10 (the only version). Attributes and geometry are Conv's.

    y = conv(x - x_zero_point, w - w_zero_point) in int32, every product and sum exact and the
    result wrapped to 32 bits (which no realistic kernel reaches). Padding holds the zero
    point, so it contributes nothing. x_zero_point is per tensor; w_zero_point per tensor or
    per output channel ([M]). x and w are uint8 or int8, independently.
    """

    op_type = "ConvInteger"
    since_versions = (10,)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        padded = list(inputs) + [None] * (4 - len(inputs))
        x, w, x_zp, w_zp = padded
        assert x is not None and w is not None
        check_quantized(self, x, "x")
        check_quantized(self, w, "w")
        kernel, strides, pads, dilations = self.geometry(x.shape, w.shape)
        check_per_tensor(self, x_zp, "x_zero_point")
        check_vector_or_scalar(self, w_zp, w.shape[0], "w_zero_point")
        for zp, operand, name in ((x_zp, x, "x_zero_point"), (w_zp, w, "w_zero_point")):
            if zp is not None and zp.dtype != operand.dtype:
                raise self.error(f"{name} has type {zp.dtype.short}, its operand "
                                 f"{operand.dtype.short}; they must match")
        out = conv_output_shape(x.shape[2:], kernel, strides, pads, dilations)
        if any(size < 1 for size in out):
            raise self.error(f"kernel {list(kernel)} does not fit input {list(x.shape)} "
                             f"with pads {list(pads)}")
        return [TensorInfo(DataType.INT32, (x.shape[0], w.shape[0], *out))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (4 - len(inputs))
        x, w, x_zp, w_zp = padded
        assert x is not None and w is not None
        x_offset = 0 if x_zp is None else int(x_zp.reshape(()))
        return [integer_conv(self, x, x_offset, w, output_channel_offsets(w_zp, w.ndim))]


OPS = (ConvInteger,)
