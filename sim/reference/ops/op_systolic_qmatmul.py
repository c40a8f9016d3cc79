"""systolic.QMatMul: the fused integer matrix product the mapper produces (Gemm, MatMul,
QGemm, QLinearMatMul, MatMulInteger with their requantization), as the accelerator computes
it."""

from collections.abc import Sequence

import numpy as np
from systolic.mapper.ir import Attrs, DataType

from ..kernels.conv import exact_in_float64
from ..op import Op, TensorInfo
from ._shared import int_attr
from ._systolic import (
    SYSTOLIC_DOMAIN,
    OutputStage,
    check_eight_bit,
    int_list_attr,
    output_stage,
    type_range,
)


class QMatMul(Op):
    """systolic.QMatMul-1: Y = QMatMul(A, B, Bias?).

    A is uint8/int8 [..., K]; B an int8 constant [K, N] (zero point subtracted, transposes
    applied); Bias optional int32 [N]. Attributes: a_zero_point (in A's type), multiplier and
    shift (N values each), y_zero_point, y_type (2 uint8, 3 int8), y_lo, y_hi.

    acc[..., n] = sum_k (A[..., k] - a_zero_point) * B[k, n] + Bias[n], exact in int64;
    Y[..., n] = clamp(round_half_to_even(acc * M[n] / 2**(31 + s[n])) + y_zero_point,
    y_lo, y_hi). Y is [..., N].
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QMatMul"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.a_zero_point = int_attr(self, "a_zero_point", 0)
        self.multiplier = int_list_attr(self, "multiplier")
        self.shift = int_list_attr(self, "shift")
        self.stage = OutputStage(self)

    def _check(self, a_shape: Sequence[int], b_shape: Sequence[int]) -> None:
        if len(a_shape) < 1 or len(b_shape) != 2 or a_shape[-1] != b_shape[0]:
            raise self.error(f"A {list(a_shape)} must be [..., K] and B {list(b_shape)} [K, N]")
        n = b_shape[1]
        if len(self.multiplier) != n or len(self.shift) != n:
            raise self.error(f"multiplier and shift need {n} values (one per output column), "
                             f"got {len(self.multiplier)} and {len(self.shift)}")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b, *rest = inputs
        bias = rest[0] if rest else None
        assert a is not None and b is not None
        check_eight_bit(self, a, "A")
        if b.dtype != DataType.INT8:
            raise self.error(f"B has element type {b.dtype.short}; expected i8")
        lo, hi = type_range(a.dtype)
        if not lo <= self.a_zero_point <= hi:
            raise self.error(f"a_zero_point {self.a_zero_point} is outside A's range")
        self._check(a.shape, b.shape)
        n = b.shape[1]
        if bias is not None and (bias.dtype != DataType.INT32 or bias.shape != (n,)):
            raise self.error(f"Bias must be i32[{n}], got {bias.dtype.short}{list(bias.shape)}")
        return [TensorInfo(self.stage.dtype, (*a.shape[:-1], n))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b, *rest = inputs
        bias = rest[0] if rest else None
        assert a is not None and b is not None
        self._check(a.shape, b.shape)
        centered = a.astype(np.int64) - self.a_zero_point
        weights = b.astype(np.int64)
        if exact_in_float64(centered, weights, b.shape[0]):  # fast, and provably exact
            acc = np.matmul(centered.astype(np.float64), weights.astype(np.float64))
            acc = acc.astype(np.int64)
        else:
            acc = np.matmul(centered, weights)
        offset = np.zeros(b.shape[1], np.int64) if bias is None else bias.astype(np.int64)
        axis = acc.ndim - 1
        return [output_stage(acc, offset, self.multiplier, self.shift, self.stage, axis)]


OPS = (QMatMul,)
