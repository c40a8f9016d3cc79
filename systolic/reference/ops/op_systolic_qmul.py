"""systolic.QMul: the element-wise quantized product of two 8-bit tensors (the accelerator's
ADD instruction in `mul` mode, `b_broadcast` for a per-channel B), rounded once."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs
from systolic.isa.requant import MULTIPLIER_BITS, SHIFT_MAX, SHIFT_MIN
from systolic.reference.ops._shared import int_attr
from systolic.reference.ops._systolic import (
    OutputStage,
    check_eight_bit,
    check_zero_points,
    round_shift,
)
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["QMul", "last_axis_broadcast", "per_channel_broadcast"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def per_channel_broadcast(a: Sequence[int], b: Sequence[int]) -> bool:
    """True when B [N|1, C, 1, ...] broadcasts per channel over A [N, C, *spatial]."""
    return (len(a) == len(b) >= 2 and b[1] == a[1] and b[0] in (1, a[0])
            and all(d == 1 for d in b[2:]))


def last_axis_broadcast(a: Sequence[int], b: Sequence[int]) -> bool:
    """True when B [H], [1, H], [1, 1, H] ... (rank at most A's, every axis but the last 1)
    broadcasts along the last axis of A [..., H] (LayerNorm's gamma and beta)."""
    return (1 <= len(b) <= len(a) and b[-1] == a[-1] and all(d == 1 for d in b[:-1]))


class QMul(Op):
    """systolic.QMul-1: Y = QMul(A, B), A and B uint8/int8; B has A's shape or is broadcast
    per channel (A [N, C, *spatial], B [N|1, C, 1, ...]) or along A's last axis (A [..., H],
    B [H], [1, H], [1, 1, H] ...).

    Attributes: a_zero_point, b_zero_point (in A's and B's types), multiplier (signed
    int32), shift (-31..31), y_zero_point, y_type, y_lo, y_hi.

    t = (A - a_zero_point) * (B - b_zero_point) * multiplier, exact;
    Y = clamp(round_half_to_even(t / 2**(31 + shift)) + y_zero_point, y_lo, y_hi)
    (the numeric contract's "Element-wise multiply").
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QMul"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.a_zero_point = int_attr(self, "a_zero_point", 0)
        self.b_zero_point = int_attr(self, "b_zero_point", 0)
        for name in ("multiplier", "shift"):
            self.required_attr(name)
        self.multiplier = int_attr(self, "multiplier", 0)
        self.shift = int_attr(self, "shift", 0)
        if not _INT32_MIN <= self.multiplier <= _INT32_MAX:
            raise self.error("multiplier must be a signed 32-bit integer")
        if not SHIFT_MIN <= self.shift <= SHIFT_MAX:
            raise self.error(f"shift must lie in [{SHIFT_MIN}, {SHIFT_MAX}], got {self.shift}")
        self.stage = OutputStage(self)

    def _check_shapes(self, a: Sequence[int], b: Sequence[int]) -> None:
        if (tuple(a) != tuple(b) and not per_channel_broadcast(a, b)
                and not last_axis_broadcast(a, b)):
            raise self.error(f"B {list(b)} must have A's shape {list(a)}, be per channel "
                             "[N or 1, C, 1, ...] or along the last axis [1, ..., H]")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b = inputs
        assert a is not None and b is not None
        check_eight_bit(self, a, "A")
        check_eight_bit(self, b, "B")
        self._check_shapes(a.shape, b.shape)
        check_zero_points(self, ((self.a_zero_point, a, "a_zero_point"),
                                 (self.b_zero_point, b, "b_zero_point")))
        return [TensorInfo(self.stage.dtype, a.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b = inputs
        assert a is not None and b is not None
        self._check_shapes(a.shape, b.shape)
        # |A - zp|, |B - zp| < 2**9 and |M| <= 2**31: the product stays below 2**49.
        product = ((a.astype(np.int64) - self.a_zero_point)
                   * (b.astype(np.int64) - self.b_zero_point) * self.multiplier)
        q = round_shift(product, MULTIPLIER_BITS + self.shift)
        return [self.stage.finish(q)]


OPS = (QMul,)
