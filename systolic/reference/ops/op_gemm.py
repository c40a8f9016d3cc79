"""Gemm: Y = alpha * A' B' + beta * C, with A' = A or A^T and B' = B or B^T."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import (
    NUMERIC_TYPES,
    check_type,
    float_attr,
    gemm_dims,
    int_attr,
)
from systolic.reference.ops.base import Op, TensorInfo


class Gemm(Op):
    """Gemm-1 and -6: C is required; without `broadcast` it must be [M, N], with it C
    broadcasts to [M, N]. Gemm-7 and -9: C is required and always broadcasts (the
    `broadcast` attribute is gone). Gemm-11 and -13: C is optional. Versions 9 and 13 only
    widen the types. The product is computed in the inputs' type (float32 for float32)."""

    op_type = "Gemm"
    since_versions = (1, 6, 7, 9, 11, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = float_attr(self, "alpha", 1.0)
        self.beta = float_attr(self, "beta", 1.0)
        self.trans_a = int_attr(self, "transA", 0)
        self.trans_b = int_attr(self, "transB", 0)
        legacy = version < 7
        self.broadcast = int_attr(self, "broadcast", 0) if legacy else 1
        if not legacy and "broadcast" in attrs:
            raise self.error("attribute 'broadcast' exists only before Gemm-7; remove it")

    def _shapes(
        self, a: tuple[int, ...], b: tuple[int, ...], c: tuple[int, ...] | None
    ) -> tuple[int, int]:
        m, _, n = gemm_dims(self, a, b, self.trans_a, self.trans_b)
        if c is None:
            if self.version < 11:
                raise self.error("input C is required before Gemm-11")
        elif not self.broadcast:
            if c != (m, n):
                raise self.error(f"C must be [{m}, {n}] without broadcast=1, got {list(c)}")
        elif len(c) > 2 or any(
            dc not in (1, dy) for dc, dy in zip(reversed(c), (n, m), strict=False)
        ):
            raise self.error(f"C of shape {list(c)} does not broadcast to [{m}, {n}]")
        return m, n

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b, *rest = inputs
        c = rest[0] if rest else None
        assert a is not None and b is not None
        check_type(self, a, NUMERIC_TYPES, "A")
        if b.dtype != a.dtype or (c is not None and c.dtype != a.dtype):
            raise self.error("A, B and C must have the same element type")
        m, n = self._shapes(a.shape, b.shape, None if c is None else c.shape)
        return [TensorInfo(a.dtype, (m, n))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b, *rest = inputs
        c = rest[0] if rest else None
        assert a is not None and b is not None
        self._shapes(a.shape, b.shape, None if c is None else c.shape)
        a2 = a.T if self.trans_a else a
        b2 = b.T if self.trans_b else b
        y = np.matmul(a2, b2)
        if self.alpha != 1.0:
            y = y * np.asarray(self.alpha, dtype=y.dtype)
        if c is not None and self.beta != 0.0:
            y = y + (c if self.beta == 1.0 else c * np.asarray(self.beta, dtype=c.dtype))
        return [y.astype(a.dtype, copy=False)]


OPS = (Gemm,)
