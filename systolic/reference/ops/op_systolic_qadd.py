"""systolic.QAdd: the element-wise quantized addition (residual connections) of the
accelerator's ADD instruction, with one rounding of the exact sum."""

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


class QAdd(ElementwisePair):
    """systolic.QAdd-1: Y = QAdd(A, B), A and B uint8/int8 of the same shape, or B broadcast
    per channel (A [N, C, *spatial], B [N|1, C, 1, ...]: a batch norm's shift) or along A's
    last axis (A [..., H], B [H], [1, H], [1, 1, H] ...: LayerNorm's beta).

    Attributes: a_zero_point, b_zero_point (in A's and B's types), multiplier_a,
    multiplier_b (signed int32), shift (-31..31), y_zero_point, y_type, y_lo, y_hi.

    t = (A - a_zero_point) * multiplier_a + (B - b_zero_point) * multiplier_b, exact;
    Y = clamp(round_half_to_even(t / 2**(31 + shift)) + y_zero_point, y_lo, y_hi)
    (the numeric contract's "Element-wise add").
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QAdd"
    since_versions = (1,)

    multipliers = ("multiplier_a", "multiplier_b")
    multiplier_a: int
    multiplier_b: int

    def check_shapes(self, a: Sequence[int], b: Sequence[int]) -> None:
        if (tuple(a) != tuple(b) and not per_channel_broadcast(a, b)
                and not last_axis_broadcast(a, b)):
            raise self.error(f"A {list(a)} and B {list(b)} must have the same shape, or B be "
                             "per channel [N or 1, C, 1, ...] or along A's last axis "
                             "[1, ..., H]")

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b = inputs
        assert a is not None and b is not None
        self.check_shapes(a.shape, b.shape)
        # |A - zp| < 2**9 and |M| <= 2**31: each product below 2**40, the sum fits int64.
        total = ((a.astype(np.int64) - self.a_zero_point) * self.multiplier_a
                 + (b.astype(np.int64) - self.b_zero_point) * self.multiplier_b)
        q = round_shift(total, MULTIPLIER_BITS + self.shift)
        return [self.stage.finish(q)]


OPS = (QAdd,)
