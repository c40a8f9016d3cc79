"""MatMulInteger: Y = (A - a_zero_point) @ (B - b_zero_point), accumulated in int32."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops._quantized import (
    broadcast_matmul_shape,
    check_quantized,
    check_vector_or_scalar,
    int_matmul,
)
from systolic.reference.ops.base import Op, TensorInfo


def zero_point_rows(zero_point: np.ndarray | None, a_ndim: int) -> np.ndarray | int:
    """Return A's zero point shaped to subtract from A: per tensor, or per row ([M] -> [M, 1])."""
    if zero_point is None:
        return 0
    z = zero_point.astype(np.int64)
    if z.size == 1:
        return int(z.reshape(()))
    return z.reshape(-1, 1) if a_ndim >= 2 else z


def zero_point_columns(zero_point: np.ndarray | None) -> np.ndarray | int:
    """Return B's zero point shaped to subtract from B: per tensor, or per column ([N])."""
    if zero_point is None:
        return 0
    z = zero_point.astype(np.int64)
    return int(z.reshape(())) if z.size == 1 else z.reshape(-1)


class MatMulInteger(Op):
    """MatMulInteger-10 (the only version).

    Y = (A - a_zero_point) @ (B - b_zero_point) with numpy matmul broadcasting; every product
    and sum is exact and the result is wrapped to int32 (the accumulator width), which no
    realistic K reaches. a_zero_point is per tensor or per row (1-D of A's M rows); b_zero_point
    per tensor or per column (1-D of B's N columns). A and B are uint8 or int8, independently.
    """

    op_type = "MatMulInteger"
    since_versions = (10,)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b, *rest = inputs
        a_zp = rest[0] if len(rest) > 0 else None
        b_zp = rest[1] if len(rest) > 1 else None
        assert a is not None and b is not None
        check_quantized(self, a, "A")
        check_quantized(self, b, "B")
        out = broadcast_matmul_shape(self, a.shape, b.shape)
        rows = a.shape[-2] if len(a.shape) >= 2 else 1
        check_vector_or_scalar(self, a_zp, rows, "a_zero_point")
        check_vector_or_scalar(self, b_zp, b.shape[-1] if len(b.shape) >= 2 else 1,
                               "b_zero_point")
        for zp, operand, name in ((a_zp, a, "a_zero_point"), (b_zp, b, "b_zero_point")):
            if zp is not None and zp.dtype != operand.dtype:
                raise self.error(f"{name} has type {zp.dtype.short}, its operand "
                                 f"{operand.dtype.short}; they must match")
        return [TensorInfo(DataType.INT32, out)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b, *rest = inputs
        a_zp = rest[0] if len(rest) > 0 else None
        b_zp = rest[1] if len(rest) > 1 else None
        assert a is not None and b is not None
        a_diff = a.astype(np.int64) - zero_point_rows(a_zp, a.ndim)
        b_diff = b.astype(np.int64) - zero_point_columns(b_zp)
        return [int_matmul(a_diff, b_diff)]

OPS = (MatMulInteger,)
