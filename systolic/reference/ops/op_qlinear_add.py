"""com.microsoft QLinearAdd: quantized element-wise addition with numpy broadcasting."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import (
    check_per_tensor,
    check_quantized,
    check_scale_type,
    zero_point_value,
)
from systolic.reference.ops._shared import broadcast_shape
from systolic.reference.ops.base import Op, TensorInfo


def _broadcasts_innermost(shape: tuple[int, ...], out: tuple[int, ...]) -> bool:
    """True when an operand of `shape` is constant along the innermost output axis of size
    above 1 (onnxruntime then hands its kernel one element of it per span)."""
    full = (1,) * (len(out) - len(shape)) + shape
    for size, out_size in zip(reversed(full), reversed(out), strict=True):
        if out_size > 1:
            return size == 1
    return True


class QLinearAdd(Op):
    """com.microsoft QLinearAdd-1: C = (A_scale (A - A_zp) + B_scale (B - B_zp)) / C_scale +
    C_zp, with numpy broadcasting, uint8 or int8.

    Computed as onnxruntime's AVX2/FMA kernel (MlasQLinearAddKernelAvx2) does, in float32 with
    fused multiply-adds on the raw (not zero-point-corrected) inputs:
    rA = A_scale / C_scale, rB = B_scale / C_scale,
    F = float(C_zp) - fma(rA, float(A_zp), rB * float(B_zp)),
    C = saturate(round_half_to_even(fma(a, rA, fma(b, rB, F)))), except that when A is
    constant along the innermost output axis (onnxruntime's "scalar A" span) the order is
    fma(b, rB, fma(a, rA, F)). This is bit-exact with onnxruntime on x86-64 CPUs with FMA
    (AVX2); its SSE2 and ARM kernels round differently (at most 1 apart, rarely).
    """

    domain = "com.microsoft"
    op_type = "QLinearAdd"
    since_versions = (1,)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        padded = list(inputs) + [None] * (8 - len(inputs))
        a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp = padded
        assert a is not None and b is not None and a_scale is not None
        assert b_scale is not None and c_scale is not None
        check_quantized(self, a, "A")
        if b.dtype != a.dtype:
            raise self.error(f"A is {a.dtype.short} and B is {b.dtype.short}; they must match")
        for info, name in ((a_scale, "A_scale"), (b_scale, "B_scale"), (c_scale, "C_scale")):
            check_scale_type(self, info, name)
            check_per_tensor(self, info, name)
        for zp, name in ((a_zp, "A_zero_point"), (b_zp, "B_zero_point"), (c_zp, "C_zero_point")):
            check_per_tensor(self, zp, name)
            if zp is not None and zp.dtype != a.dtype:
                raise self.error(f"{name} has type {zp.dtype.short}; expected {a.dtype.short}")
        return [TensorInfo(a.dtype, broadcast_shape(self, a.shape, b.shape))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (8 - len(inputs))
        a, a_scale, a_zp, b, b_scale, b_zp, c_scale, c_zp = padded
        assert a is not None and b is not None and a_scale is not None
        assert b_scale is not None and c_scale is not None
        out_shape = tuple(int(d) for d in np.broadcast_shapes(a.shape, b.shape))
        c_s = np.float32(c_scale.reshape(()))
        ra = np.float32(a_scale.reshape(())) / c_s
        rb = np.float32(b_scale.reshape(())) / c_s
        fixed = np.float32(zero_point_value(c_zp)) - quant.fma_float32(
            ra, np.float32(zero_point_value(a_zp)), rb * np.float32(zero_point_value(b_zp)))
        av = np.broadcast_to(a, out_shape).astype(np.float32)
        bv = np.broadcast_to(b, out_shape).astype(np.float32)
        if _broadcasts_innermost(a.shape, out_shape):
            total = quant.fma_float32(bv, rb, quant.fma_float32(av, ra, fixed))
        else:
            total = quant.fma_float32(av, ra, quant.fma_float32(bv, rb, fixed))
        return [quant.saturate(quant.round_half_to_even(total), a.dtype)]


OPS = (QLinearAdd,)
