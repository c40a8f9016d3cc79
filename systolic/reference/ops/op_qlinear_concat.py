"""com.microsoft QLinearConcat: concatenation that requantizes each input to the output's
scale and zero point."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import check_per_tensor, check_quantized, check_scale_type
from systolic.reference.ops._shared import int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class QLinearConcat(Op):
    """com.microsoft QLinearConcat-1: inputs are Y_scale, Y_zero_point, then one (X, X_scale,
    X_zero_point) triple per tensor; `axis` is required. uint8 or int8.

    An input whose scale and zero point equal the output's is copied; any other is requantized
    as onnxruntime's lookup table computes it: y = saturate(round_half_to_even(
    float32(float32(x - x_zp) * x_scale) / y_scale) + y_zp), i.e. `quant.dequantize` then
    `quant.quantize`, bit for bit.
    """

    domain = "com.microsoft"
    op_type = "QLinearConcat"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.required_attr("axis")
        self.axis = int_attr(self, "axis", 0)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        y_scale, y_zp, *rest = inputs
        assert y_scale is not None and y_zp is not None
        if not rest or len(rest) % 3:
            raise self.error("after Y_scale and Y_zero_point, inputs must come in (X, X_scale, "
                             f"X_zero_point) triples; got {len(rest)} more inputs")
        check_quantized(self, y_zp, "Y_zero_point")
        check_scale_type(self, y_scale, "Y_scale")
        check_per_tensor(self, y_scale, "Y_scale")
        check_per_tensor(self, y_zp, "Y_zero_point")
        xs = rest[0::3]
        first = xs[0]
        assert first is not None
        rank = len(first.shape)
        axis = normalize_axis(self, self.axis, rank)
        total = 0
        for i in range(len(xs)):
            x, scale, zp = rest[3 * i: 3 * i + 3]
            assert x is not None and scale is not None and zp is not None
            if x.dtype != y_zp.dtype or zp.dtype != y_zp.dtype:
                raise self.error(f"input {i} and its zero point must be {y_zp.dtype.short}")
            check_scale_type(self, scale, f"X_scale of input {i}")
            check_per_tensor(self, scale, f"X_scale of input {i}")
            check_per_tensor(self, zp, f"X_zero_point of input {i}")
            if len(x.shape) != rank or any(
                d != f for j, (d, f) in enumerate(zip(x.shape, first.shape, strict=True))
                if j != axis
            ):
                raise self.error(f"input {i} of shape {list(x.shape)} does not match "
                                 f"{list(first.shape)} outside axis {axis}")
            total += x.shape[axis]
        shape = tuple(total if j == axis else d for j, d in enumerate(first.shape))
        return [TensorInfo(y_zp.dtype, shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        y_scale, y_zp, *rest = inputs
        assert y_scale is not None and y_zp is not None
        parts = []
        for i in range(0, len(rest), 3):
            x, scale, zp = rest[i: i + 3]
            assert x is not None and scale is not None and zp is not None
            same = (np.float32(scale.reshape(())) == np.float32(y_scale.reshape(()))
                    and int(zp.reshape(())) == int(y_zp.reshape(())))
            if same:
                parts.append(x)
            else:
                real = quant.dequantize(x, scale, zp, axis=None)
                parts.append(quant.quantize(real, y_scale, y_zp, axis=None, dtype=y_zp.dtype))
        axis = normalize_axis(self, self.axis, parts[0].ndim)
        return [np.concatenate(parts, axis=axis)]


OPS = (QLinearConcat,)
