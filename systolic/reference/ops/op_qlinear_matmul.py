"""QLinearMatMul: int32 matrix product of zero-point-corrected operands, requantized."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import (
    broadcast_matmul_shape,
    check_quantized,
    check_scale_type,
    check_vector_or_scalar,
    int_matmul,
)
from systolic.reference.ops.base import Op, TensorInfo
from systolic.reference.ops.op_matmul_integer import zero_point_columns, zero_point_rows


def output_multiplier(
    a_scale: np.ndarray, b_scale: np.ndarray, y_scale: np.ndarray, a_ndim: int
) -> np.ndarray:
    """Return the float32 requantization multiplier (a_scale * b_scale) / y_scale, computed as
    onnxruntime does: a float32 product, then a float32 division (other orders differ in the
    last bit, and so in a few outputs). Per-row a_scale ([M]) and per-column b_scale ([N])
    give an [M, N] multiplier; per tensor gives a scalar."""
    a = np.asarray(a_scale, dtype=np.float32)
    a = a.reshape(()) if a.size == 1 else (a.reshape(-1, 1) if a_ndim >= 2 else a.reshape(-1))
    b = np.asarray(b_scale, dtype=np.float32)
    b = b.reshape(()) if b.size == 1 else b.reshape(-1)
    y = np.asarray(y_scale, dtype=np.float32).reshape(())
    return np.asarray((a * b) / y, dtype=np.float32)


class QLinearMatMul(Op):
    """QLinearMatMul-10, -21 (21 only adds float8 and float16/bfloat16 scales, unsupported).

    acc = (a - a_zero_point) @ (b - b_zero_point), exact, wrapped to int32 (numpy matmul
    broadcasting); y = saturate(round_half_to_even(float32(acc) * M) + y_zero_point) with
    M = float32(float32(a_scale * b_scale) / y_scale): onnxruntime's arithmetic
    (MlasRequantizeOutput), bit for bit. a_scale/a_zero_point are per tensor or per row ([M]),
    b_scale/b_zero_point per tensor or per column ([N]); a, b and y are uint8 or int8.
    """

    op_type = "QLinearMatMul"
    since_versions = (10, 21)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = inputs
        assert a is not None and b is not None and y_zp is not None
        assert a_scale is not None and b_scale is not None and y_scale is not None
        for info, name in ((a, "a"), (b, "b"), (y_zp, "y_zero_point")):
            check_quantized(self, info, name)
        for info, name in ((a_scale, "a_scale"), (b_scale, "b_scale"), (y_scale, "y_scale")):
            check_scale_type(self, info, name)
        out = broadcast_matmul_shape(self, a.shape, b.shape)
        rows = a.shape[-2] if len(a.shape) >= 2 else 1
        cols = b.shape[-1] if len(b.shape) >= 2 else 1
        check_vector_or_scalar(self, a_scale, rows, "a_scale")
        check_vector_or_scalar(self, a_zp, rows, "a_zero_point")
        check_vector_or_scalar(self, b_scale, cols, "b_scale")
        check_vector_or_scalar(self, b_zp, cols, "b_zero_point")
        check_vector_or_scalar(self, y_scale, 1, "y_scale")
        check_vector_or_scalar(self, y_zp, 1, "y_zero_point")
        for zp, operand, name in ((a_zp, a, "a_zero_point"), (b_zp, b, "b_zero_point")):
            if zp is not None and zp.dtype != operand.dtype:
                raise self.error(f"{name} has type {zp.dtype.short}, its operand "
                                 f"{operand.dtype.short}; they must match")
        return [TensorInfo(y_zp.dtype, out)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = inputs
        assert a is not None and b is not None and y_zp is not None
        assert a_scale is not None and b_scale is not None and y_scale is not None
        acc = int_matmul(a.astype(np.int64) - zero_point_rows(a_zp, a.ndim),
                         b.astype(np.int64) - zero_point_columns(b_zp))
        multiplier = output_multiplier(a_scale, b_scale, y_scale, a.ndim)
        if b.ndim == 1 and multiplier.ndim == 2:  # per-row scale, vector b: [M, 1] -> [M]
            multiplier = multiplier.reshape(-1)
        return [quant.requantize(acc, multiplier, int(y_zp.reshape(())), y_zp.dtype)]


OPS = (QLinearMatMul,)
