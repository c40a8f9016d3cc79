"""`ElementwisePair`: what systolic.QAdd and systolic.QMul share (the vector unit's ADD on two
8-bit tensors): zero points, the required multiplier and shift attributes, the operand checks,
and the broadcast forms B may take."""

from collections.abc import Sequence

from systolic.ir import Attrs
from systolic.isa.requant import SHIFT_MAX, SHIFT_MIN
from systolic.reference.ops._shared import int_attr
from systolic.reference.ops._systolic import OutputStage, check_eight_bit, check_zero_points
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["ElementwisePair", "last_axis_broadcast", "per_channel_broadcast"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def per_channel_broadcast(a: Sequence[int], b: Sequence[int]) -> bool:
    """True when B [N|1, C, 1, ...] broadcasts per channel over A [N, C, *spatial]."""
    return (len(a) == len(b) >= 2 and b[1] == a[1] and b[0] in (1, a[0])
            and all(d == 1 for d in b[2:]))


def last_axis_broadcast(a: Sequence[int], b: Sequence[int]) -> bool:
    """True when B [H], [1, H], [1, 1, H] ... (rank at most A's, every axis but the last 1)
    broadcasts along the last axis of A [..., H] (LayerNorm's gamma and beta)."""
    return (1 <= len(b) <= len(a) and b[-1] == a[-1] and all(d == 1 for d in b[:-1]))


class ElementwisePair(Op):
    """Reads a_zero_point and b_zero_point (in A's and B's types, default 0), the required
    signed 32-bit `multipliers` a subclass names, the required shift (SHIFT_MIN..SHIFT_MAX)
    and the output stage; `infer` checks both operands are 8-bit, B's shape (`check_shapes`)
    and the zero points, and gives Y A's shape in the output stage's type."""

    multipliers: tuple[str, ...] = ()

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.a_zero_point = int_attr(self, "a_zero_point", 0)
        self.b_zero_point = int_attr(self, "b_zero_point", 0)
        for name in (*self.multipliers, "shift"):
            self.required_attr(name)
        for name in self.multipliers:
            value = int_attr(self, name, 0)
            if not _INT32_MIN <= value <= _INT32_MAX:
                raise self.error(f"{name} must be a signed 32-bit integer")
            setattr(self, name, value)
        self.shift = int_attr(self, "shift", 0)
        if not SHIFT_MIN <= self.shift <= SHIFT_MAX:
            raise self.error(f"shift must lie in [{SHIFT_MIN}, {SHIFT_MAX}], got {self.shift}")
        self.stage = OutputStage(self)

    def check_shapes(self, a: Sequence[int], b: Sequence[int]) -> None:
        """Raise unless B's shape `b` may combine with A's `a` (a subclass's forms)."""
        raise NotImplementedError

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b = inputs
        assert a is not None and b is not None
        check_eight_bit(self, a, "A")
        check_eight_bit(self, b, "B")
        self.check_shapes(a.shape, b.shape)
        check_zero_points(self, ((self.a_zero_point, a, "a_zero_point"),
                                 (self.b_zero_point, b, "b_zero_point")))
        return [TensorInfo(self.stage.dtype, a.shape)]
