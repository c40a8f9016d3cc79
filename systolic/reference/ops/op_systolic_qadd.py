"""systolic.QAdd: the element-wise quantized addition (residual connections) of the
accelerator's ADD instruction, with one rounding of the exact sum."""

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
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class QAdd(Op):
    """systolic.QAdd-1: Y = QAdd(A, B), A and B uint8/int8 of the same shape, or B broadcast
    along A's last axis (A [..., H], B [H], [1, H], [1, 1, H] ...: LayerNorm's beta).

    Attributes: a_zero_point, b_zero_point (in A's and B's types), multiplier_a,
    multiplier_b (signed int32), shift (-31..31), y_zero_point, y_type, y_lo, y_hi.

    t = (A - a_zero_point) * multiplier_a + (B - b_zero_point) * multiplier_b, exact;
    Y = clamp(round_half_to_even(t / 2**(31 + shift)) + y_zero_point, y_lo, y_hi)
    (the numeric contract's "Element-wise add").
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QAdd"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.a_zero_point = int_attr(self, "a_zero_point", 0)
        self.b_zero_point = int_attr(self, "b_zero_point", 0)
        self.multiplier_a = self._required_int("multiplier_a")
        self.multiplier_b = self._required_int("multiplier_b")
        self.shift = self._required_int("shift")
        for name in ("multiplier_a", "multiplier_b"):
            if not _INT32_MIN <= getattr(self, name) <= _INT32_MAX:
                raise self.error(f"{name} must be a signed 32-bit integer")
        if not SHIFT_MIN <= self.shift <= SHIFT_MAX:
            raise self.error(f"shift must lie in [{SHIFT_MIN}, {SHIFT_MAX}], got {self.shift}")
        self.stage = OutputStage(self)

    def _required_int(self, name: str) -> int:
        self.required_attr(name)
        return int_attr(self, name, 0)

    def _check_shapes(self, a: Sequence[int], b: Sequence[int]) -> None:
        if tuple(a) != tuple(b) and not last_axis_broadcast(a, b):
            raise self.error(f"A {list(a)} and B {list(b)} must have the same shape, or B be "
                             "along A's last axis [1, ..., H]")

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
        # |A - zp| < 2**9 and |M| <= 2**31: each product below 2**40, the sum fits int64.
        total = ((a.astype(np.int64) - self.a_zero_point) * self.multiplier_a
                 + (b.astype(np.int64) - self.b_zero_point) * self.multiplier_b)
        q = round_shift(total, MULTIPLIER_BITS + self.shift)
        return [self.stage.finish(q)]


OPS = (QAdd,)
