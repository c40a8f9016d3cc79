"""systolic.QMatMulInt: an integer matrix product whose int32 accumulators leave the array
unrequantized (STORE with `raw`): the MatMulInteger of dynamic quantization, with the part of
the run-time zero point left to the host (docs/numeric-contract.md "Raw accumulators")."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, DataType
from systolic.reference.kernels.conv import exact_in_float64
from systolic.reference.ops._systolic import check_eight_bit
from systolic.reference.ops.base import Op, TensorInfo
from systolic.reference.ops.op_systolic_qmatmul import matmul_shape

__all__ = ["QMatMulInt", "signed_activation"]

_FLIP = 128


def signed_activation(a: np.ndarray) -> np.ndarray:
    """Return A in the int8 domain as int64: A - 128 for uint8 (the LOAD's flip_sign), A for
    int8."""
    wide = a.astype(np.int64)
    return wide - _FLIP if a.dtype == np.uint8 else wide


class QMatMulInt(Op):
    """systolic.QMatMulInt-1: Y = QMatMulInt(A, B, Bias?), Y int32.

    A uint8/int8 [..., K] (or [K]); B int8 [..., K, N] (rank >= 2), the weights with their
    zero point subtracted, or a computed uint8/int8 B (B_s8 = B - 128 for uint8, as for A);
    leading axes broadcast as numpy matmul (a 2-D B: every leading axis of A is a row axis).
    Bias optional int32 [N]. No attributes.
    Y[..., m, n] = wrap32(sum_k A_s8[..., m, k] * B_s8[..., k, n] + Bias[n]) with A_s8 = A - 128
    for uint8 A and A for int8 A: MatMulInteger(A, B + b_zp, 128, b_zp) plus Bias (for uint8
    A), the zero point 128 implied. The mapper adds (128 - a_zero_point) * sum_k B[k, n] for
    another zero point (into Bias when it is a constant, on the host when it is computed).
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QMatMulInt"
    since_versions = (1,)

    def _shape(self, a_shape: Sequence[int], b_shape: Sequence[int]) -> tuple[int, ...]:
        shape = matmul_shape(a_shape, b_shape)
        if shape is None:
            raise self.error(f"A {list(a_shape)} must be [..., K] and B {list(b_shape)} "
                             "[..., K, N] with broadcastable leading axes")
        return shape

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b, *rest = inputs
        bias = rest[0] if rest else None
        assert a is not None and b is not None
        check_eight_bit(self, a, "A")
        check_eight_bit(self, b, "B")
        shape = self._shape(a.shape, b.shape)
        n = b.shape[-1]
        if bias is not None and (bias.dtype != DataType.INT32 or bias.shape != (n,)):
            raise self.error(f"Bias must be i32[{n}], got {bias.dtype.short}{list(bias.shape)}")
        return [TensorInfo(DataType.INT32, shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b, *rest = inputs
        bias = rest[0] if rest else None
        assert a is not None and b is not None
        self._shape(a.shape, b.shape)
        centered = signed_activation(a)
        weights = signed_activation(b)
        if exact_in_float64(centered, weights, b.shape[-2]):  # fast, and provably exact
            acc = np.matmul(centered.astype(np.float64), weights.astype(np.float64))
            acc = acc.astype(np.int64)
        else:
            acc = np.matmul(centered, weights)
        if bias is not None:
            acc = acc + bias.astype(np.int64).reshape(-1)
        wrapped = (acc + 2**31) % 2**32 - 2**31
        return [np.asarray(wrapped.astype(np.int32))]


OPS = (QMatMulInt,)
