"""systolic.QMul: the element-wise quantized product of two 8-bit tensors (the accelerator's
ADD instruction in `mul` mode, `b_broadcast` for a per-channel B), rounded once."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN
from systolic.isa.requant import MULTIPLIER_BITS
from systolic.reference.ops._elementwise_pair import (
    ElementwisePair,
    last_axis_broadcast,
    per_channel_broadcast,
)
from systolic.reference.ops._systolic import round_shift

__all__ = ["QMul", "last_axis_broadcast", "per_channel_broadcast"]


class QMul(ElementwisePair):
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

    multipliers = ("multiplier",)
    multiplier: int

    def check_shapes(self, a: Sequence[int], b: Sequence[int]) -> None:
        if (tuple(a) != tuple(b) and not per_channel_broadcast(a, b)
                and not last_axis_broadcast(a, b)):
            raise self.error(f"B {list(b)} must have A's shape {list(a)}, be per channel "
                             "[N or 1, C, 1, ...] or along the last axis [1, ..., H]")

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b = inputs
        assert a is not None and b is not None
        self.check_shapes(a.shape, b.shape)
        # |A - zp|, |B - zp| < 2**9 and |M| <= 2**31: the product stays below 2**49.
        product = ((a.astype(np.int64) - self.a_zero_point)
                   * (b.astype(np.int64) - self.b_zero_point) * self.multiplier)
        q = round_shift(product, MULTIPLIER_BITS + self.shift)
        return [self.stage.finish(q)]


OPS = (QMul,)
