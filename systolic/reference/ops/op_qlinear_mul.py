"""com.microsoft QLinearMul: quantized element-wise multiplication with numpy broadcasting."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import zero_point_value
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_qlinear_add import QLinearAdd


class QLinearMul(QLinearAdd):
    """com.microsoft QLinearMul-1: C = (A - A_zp)(B - B_zp) * (A_scale B_scale / C_scale) +
    C_zp, with numpy broadcasting, uint8 or int8. Inputs are checked as QLinearAdd's.

    The product of the corrected inputs is exact in int32; it is requantized as onnxruntime's
    kernel does: saturate(round_half_to_even(float32(p) * M) + C_zp) with the float32
    multiplier M = float32(A_scale * B_scale) / C_scale.
    """

    op_type = "QLinearMul"

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        return super().infer(inputs)

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (8 - len(inputs))
        a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp = padded
        assert a is not None and b is not None and a_scale is not None
        assert b_scale is not None and c_scale is not None
        product = ((a.astype(np.int64) - zero_point_value(a_zp))
                   * (b.astype(np.int64) - zero_point_value(b_zp)))
        multiplier = (np.float32(a_scale.reshape(())) * np.float32(b_scale.reshape(()))
                      / np.float32(c_scale.reshape(())))
        return [quant.requantize(product, multiplier, zero_point_value(c_zp), a.dtype)]


OPS = (QLinearMul,)
