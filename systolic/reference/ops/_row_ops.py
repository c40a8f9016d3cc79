"""What the row instructions' reference ops (systolic.QSoftmax, systolic.QLayerNorm) share: the
`axis`, `multiplier` and `shift` attributes of their output scaling, checked once, and the
rows of X (X flattened from `axis` on, as LayerNormalization and Softmax-1/11 coerce)."""

from collections.abc import Sequence

import numpy as np

from systolic.isa.requant import SHIFT_MAX, SHIFT_MIN
from systolic.reference.ops._shared import int_attr, normalize_axis
from systolic.reference.ops.base import Op

__all__ = ["RowScaling", "row_length"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class RowScaling:
    """The checked `axis` (default -1), `multiplier` (required, signed int32) and `shift`
    (required, SHIFT_MIN..SHIFT_MAX) of `op`; a ModelError naming the node otherwise."""

    def __init__(self, op: Op) -> None:
        for name in ("multiplier", "shift"):
            op.required_attr(name)
        self.axis = int_attr(op, "axis", -1)
        self.multiplier = int_attr(op, "multiplier", 0)
        self.shift = int_attr(op, "shift", 0)
        if not _INT32_MIN <= self.multiplier <= _INT32_MAX:
            raise op.error("multiplier must be a signed 32-bit integer")
        if not SHIFT_MIN <= self.shift <= SHIFT_MAX:
            raise op.error(f"shift must lie in [{SHIFT_MIN}, {SHIFT_MAX}], got {self.shift}")


def row_length(op: Op, axis: int, shape: Sequence[int], longest: int | None = None
               ) -> tuple[int, int]:
    """Return (the normalized axis, the row length H = prod(shape[axis:])) of X; a ModelError
    when X is a scalar, the axis is out of range or (with `longest`) H is not in 1..longest."""
    if len(shape) == 0:
        raise op.error("X must have at least one dimension")
    axis = normalize_axis(op, axis, len(shape))
    length = int(np.prod(shape[axis:], dtype=np.int64))
    if longest is not None and not 1 <= length <= longest:
        raise op.error(f"rows (X {list(shape)} from axis {axis} on) must hold 1 to "
                       f"{longest} elements, not {length}")
    return axis, length
