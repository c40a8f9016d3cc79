"""com.microsoft QGemm: quantized Gemm with int32 bias, quantized or float output."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import (
    check_per_tensor,
    check_quantized,
    check_scale_type,
    check_vector_or_scalar,
    int_matmul,
)
from systolic.reference.ops._shared import float_attr, gemm_dims, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class QGemm(Op):
    """com.microsoft QGemm-1 (onnxruntime contrib operator).

    acc = (A' - a_zero_point) @ (B' - b_zero_point) + C, with A' = A.T if transA and B' = B.T
    if transB, exact and wrapped to int32; C (int32, optional) broadcasts unidirectionally to
    [M, N] and is added in int32 before requantization, as onnxruntime accumulates into it.
    The multiplier is M = float32(float32(float32(alpha * a_scale) * b_scale) / y_scale)
    (onnxruntime's order); per-column b_scale/b_zero_point ([N]) give per-column multipliers.

    With y_scale and y_zero_point: y = saturate(round_half_to_even(float32(acc) * M) +
    y_zero_point), the type of y_zero_point. Without both: y = float32(acc) * M' as float32,
    with M' = float32(alpha * a_scale) * b_scale. y_scale without y_zero_point is rejected
    (onnxruntime would silently return floats divided by y_scale).
    """

    domain = "com.microsoft"
    op_type = "QGemm"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = float_attr(self, "alpha", 1.0)
        self.trans_a = bool(int_attr(self, "transA", 0))
        self.trans_b = bool(int_attr(self, "transB", 0))

    def _dims(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, int, int]:
        return gemm_dims(self, a, b, self.trans_a, self.trans_b)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        padded = list(inputs) + [None] * (9 - len(inputs))
        a, a_scale, a_zp, b, b_scale, b_zp, c, y_scale, y_zp = padded
        assert a is not None and b is not None and a_scale is not None and b_scale is not None
        check_quantized(self, a, "A")
        check_quantized(self, b, "B")
        for info, name in ((a_scale, "a_scale"), (b_scale, "b_scale"), (y_scale, "y_scale")):
            if info is not None:
                check_scale_type(self, info, name)
        m, _, n = self._dims(a.shape, b.shape)
        check_per_tensor(self, a_scale, "a_scale")
        check_per_tensor(self, a_zp, "a_zero_point")
        check_vector_or_scalar(self, b_scale, n, "b_scale")
        check_vector_or_scalar(self, b_zp, n, "b_zero_point")
        check_per_tensor(self, y_scale, "y_scale")
        check_per_tensor(self, y_zp, "y_zero_point")
        if c is not None:
            if c.dtype != DataType.INT32:
                raise self.error(f"C must be int32, got {c.dtype.short}")
            try:
                np.broadcast_shapes(c.shape, (m, n))
                ok = len(c.shape) <= 2
            except ValueError:
                ok = False
            if not ok:
                raise self.error(f"C of shape {list(c.shape)} does not broadcast to [{m}, {n}]")
        if (y_scale is None) != (y_zp is None):
            raise UnsupportedError(f"node {self.node_label!r} (com.microsoft.QGemm): give both "
                                   "y_scale and y_zero_point for a quantized output, or neither "
                                   "for a float one")
        if y_zp is not None:
            check_quantized(self, y_zp, "y_zero_point")
        return [TensorInfo(DataType.FLOAT if y_zp is None else y_zp.dtype, (m, n))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (9 - len(inputs))
        a, a_scale, a_zp, b, b_scale, b_zp, c, y_scale, y_zp = padded
        assert a is not None and b is not None and a_scale is not None and b_scale is not None
        a_mat = a.T if self.trans_a else a
        b_mat = b.T if self.trans_b else b
        a_off = 0 if a_zp is None else int(a_zp.reshape(()))
        b_off = 0 if b_zp is None else b_zp.astype(np.int64).reshape(-1 if b_zp.size > 1 else ())
        acc = int_matmul(a_mat.astype(np.int64) - a_off, b_mat.astype(np.int64) - b_off)
        if c is not None:
            acc = (acc.astype(np.int64) + c.astype(np.int64)).astype(np.int32)
        scale = (np.float32(self.alpha) * np.float32(a_scale.reshape(()))
                 * np.asarray(b_scale, dtype=np.float32).reshape(-1 if b_scale.size > 1 else ()))
        if y_scale is None or y_zp is None:
            return [(acc.astype(np.float32) * scale).astype(np.float32)]
        multiplier = scale / np.float32(y_scale.reshape(()))
        return [quant.requantize(acc, multiplier, int(y_zp.reshape(())), y_zp.dtype)]


OPS = (QGemm,)
