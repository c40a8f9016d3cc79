"""systolic.QMatMul: the fused integer matrix product the mapper produces (Gemm, MatMul,
QGemm, QLinearMatMul, MatMulInteger with their requantization; batched and attention-style
products whose B is a computed tensor), as the accelerator computes it."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs, DataType
from systolic.reference.kernels.conv import exact_in_float64
from systolic.reference.ops._shared import int_attr
from systolic.reference.ops._systolic import (
    OutputStage,
    check_eight_bit,
    int_list_attr,
    output_stage,
    type_range,
)
from systolic.reference.ops.base import Op, TensorInfo


def matmul_shape(a_shape: Sequence[int], b_shape: Sequence[int]) -> tuple[int, ...] | None:
    """Return the shape of numpy/ONNX matmul(A, B) for B of rank >= 2 (A of rank 1 is
    [1, K] with that axis dropped from the result), or None when the shapes do not fit."""
    if len(a_shape) < 1 or len(b_shape) < 2 or a_shape[-1] != b_shape[-2]:
        return None
    if len(a_shape) == 1:
        rows: tuple[int, ...] = ()
        a_batch: tuple[int, ...] = ()
    else:
        rows, a_batch = (int(a_shape[-2]),), tuple(int(d) for d in a_shape[:-2])
    b_batch = tuple(int(d) for d in b_shape[:-2])
    if len(b_shape) == 2:  # a constant matrix: A's leading axes are all rows
        return (*(int(d) for d in a_shape[:-1]), int(b_shape[-1]))
    try:
        batch = np.broadcast_shapes(a_batch, b_batch)
    except ValueError:
        return None
    return (*batch, *rows, int(b_shape[-1]))


class QMatMul(Op):
    """systolic.QMatMul-1: Y = QMatMul(A, B, Bias?).

    A is uint8/int8 [..., K] (or [K]); B int8 [..., K, N] (rank >= 2): a constant with its zero
    point subtracted and transposes applied, or a computed uint8/int8 tensor with any
    b_zero_point of its type. Leading (batch) axes of A and B broadcast as numpy matmul
    does; with a 2-D B every leading axis of A is a row axis. Bias optional int32 [N].
    Attributes: a_zero_point (in A's type), b_zero_point (in B's type, default 0), multiplier and shift (N values, or 1 value for every column), y_zero_point,
    y_type (2 uint8, 3 int8), y_lo, y_hi.

    acc[..., m, n] = sum_k (A[..., m, k] - a_zero_point) * (B[..., k, n] - b_zero_point)
    + Bias[n], exact in int64; Y = clamp(round_half_to_even(acc * M[n] / 2**(31 + s[n])) +
    y_zero_point, y_lo, y_hi). Y has numpy matmul's shape.
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QMatMul"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.a_zero_point = int_attr(self, "a_zero_point", 0)
        self.b_zero_point = int_attr(self, "b_zero_point", 0)
        self.multiplier = int_list_attr(self, "multiplier")
        self.shift = int_list_attr(self, "shift")
        self.stage = OutputStage(self)

    def _check(self, a_shape: Sequence[int], b_shape: Sequence[int]) -> tuple[int, ...]:
        shape = matmul_shape(a_shape, b_shape)
        if shape is None:
            raise self.error(f"A {list(a_shape)} must be [..., K] and B {list(b_shape)} "
                             "[..., K, N] with broadcastable leading axes")
        n = b_shape[-1]
        if len(self.multiplier) not in (1, n) or len(self.shift) != len(self.multiplier):
            raise self.error(f"multiplier and shift need {n} values (one per output column) "
                             f"or 1, got {len(self.multiplier)} and {len(self.shift)}")
        return shape

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b, *rest = inputs
        bias = rest[0] if rest else None
        assert a is not None and b is not None
        check_eight_bit(self, a, "A")
        check_eight_bit(self, b, "B")
        for name, value, operand in (("a_zero_point", self.a_zero_point, a),
                                     ("b_zero_point", self.b_zero_point, b)):
            lo, hi = type_range(operand.dtype)
            if not lo <= value <= hi:
                raise self.error(f"{name} {value} is outside the range of {operand.dtype.short}")
        shape = self._check(a.shape, b.shape)
        n = b.shape[-1]
        if bias is not None and (bias.dtype != DataType.INT32 or bias.shape != (n,)):
            raise self.error(f"Bias must be i32[{n}], got {bias.dtype.short}{list(bias.shape)}")
        return [TensorInfo(self.stage.dtype, shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b, *rest = inputs
        bias = rest[0] if rest else None
        assert a is not None and b is not None
        self._check(a.shape, b.shape)
        centered = a.astype(np.int64) - self.a_zero_point
        weights = b.astype(np.int64) - self.b_zero_point
        k = b.shape[-2]
        if exact_in_float64(centered, weights, k):  # fast, and provably exact
            acc = np.matmul(centered.astype(np.float64), weights.astype(np.float64))
            acc = acc.astype(np.int64)
        else:
            acc = np.matmul(centered, weights)
        n = b.shape[-1]
        offset = np.zeros(n, np.int64) if bias is None else bias.astype(np.int64)
        multiplier = np.broadcast_to(np.asarray(self.multiplier, np.int64), (n,))
        shift = np.broadcast_to(np.asarray(self.shift, np.int64), (n,))
        axis = acc.ndim - 1
        return [output_stage(acc, offset, multiplier, shift, self.stage, axis)]


OPS = (QMatMul,)
