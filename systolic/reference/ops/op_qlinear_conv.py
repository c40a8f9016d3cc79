"""QLinearConv: int32 convolution plus int32 bias, requantized to uint8/int8."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.kernels import quant
from systolic.reference.kernels.conv import conv_output_shape
from systolic.reference.ops._quantized import (
    check_per_tensor,
    check_quantized,
    check_scale_type,
    check_vector_or_scalar,
)
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_conv import Conv
from systolic.reference.ops.op_conv_integer import integer_conv, output_channel_offsets


class QLinearConv(Conv):
    """QLinearConv-10 (the only version). Attributes and geometry are Conv's.

    acc = conv(x - x_zero_point, w - w_zero_point) + B, exact, wrapped to int32 (B is the
    optional int32 bias [M], quantized with scale x_scale * w_scale and zero point 0);
    y = saturate(round_half_to_even(float32(acc) * M[m]) + y_zero_point) with the per-channel
    multiplier M[m] = float32(float32(x_scale * w_scale[m]) / y_scale). This is onnxruntime's
    arithmetic (MlasRequantizeOutput; also its symmetric-weight ConvSym kernels), matched bit
    for bit. w_scale and w_zero_point are per tensor or per output channel ([M]); x, w and y
    are uint8 or int8 (x and y of one type in onnxruntime, not required here).
    """

    op_type = "QLinearConv"
    since_versions = (10,)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        padded = list(inputs) + [None] * (9 - len(inputs))
        x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias = padded
        assert x is not None and w is not None and y_zp is not None
        assert x_scale is not None and w_scale is not None and y_scale is not None
        for info, name in ((x, "x"), (w, "w"), (y_zp, "y_zero_point")):
            check_quantized(self, info, name)
        for info, name in ((x_scale, "x_scale"), (w_scale, "w_scale"), (y_scale, "y_scale")):
            check_scale_type(self, info, name)
        kernel, strides, pads, dilations = self.geometry(x.shape, w.shape)
        m = w.shape[0]
        check_per_tensor(self, x_scale, "x_scale")
        check_per_tensor(self, x_zp, "x_zero_point")
        check_vector_or_scalar(self, w_scale, m, "w_scale")
        check_vector_or_scalar(self, w_zp, m, "w_zero_point")
        check_per_tensor(self, y_scale, "y_scale")
        check_per_tensor(self, y_zp, "y_zero_point")
        for zp, operand, name in ((x_zp, x, "x_zero_point"), (w_zp, w, "w_zero_point")):
            if zp is not None and zp.dtype != operand.dtype:
                raise self.error(f"{name} has type {zp.dtype.short}, its operand "
                                 f"{operand.dtype.short}; they must match")
        if bias is not None and (bias.dtype != DataType.INT32 or bias.shape != (m,)):
            raise self.error(f"B must be int32 of shape [{m}], got {bias.dtype.short}"
                             f"{list(bias.shape)}")
        out = conv_output_shape(x.shape[2:], kernel, strides, pads, dilations)
        if any(size < 1 for size in out):
            raise self.error(f"kernel {list(kernel)} does not fit input {list(x.shape)} "
                             f"with pads {list(pads)}")
        return [TensorInfo(y_zp.dtype, (x.shape[0], m, *out))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (9 - len(inputs))
        x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias = padded
        assert x is not None and w is not None and y_zp is not None
        assert x_scale is not None and w_scale is not None and y_scale is not None
        x_offset = 0 if x_zp is None else int(x_zp.reshape(()))
        acc = integer_conv(self, x, x_offset, w, output_channel_offsets(w_zp, w.ndim))
        channel = (1, -1) + (1,) * (x.ndim - 2)
        if bias is not None:
            acc = (acc.astype(np.int64) + bias.astype(np.int64).reshape(channel)).astype(np.int32)
        ws = np.asarray(w_scale, dtype=np.float32)
        multiplier = (np.float32(x_scale.reshape(())) * ws) / np.float32(y_scale.reshape(()))
        multiplier = multiplier.reshape(()) if ws.size == 1 else multiplier.reshape(channel)
        return [quant.requantize(acc, multiplier, int(y_zp.reshape(())), y_zp.dtype)]


OPS = (QLinearConv,)
