"""Helpers shared by the fused integer operators of the "systolic" domain (QConv, QMatMul,
QAdd, QMaxPool, QAveragePool): attribute parsing with node-named errors and the output stage.

The output stage is the hardware's (`systolic.isa.requant.requantize`, the numeric
contract's "Output stage"): y = clamp(round_half_to_even((acc + bias) * M / 2**(31 + s)) +
y_zero_point, y_lo, y_hi), all exact. uint8 outputs are computed as the hardware carries them,
as int8 with the top bit flipped (zero point and bounds minus 128), then flipped back: the
result is the same integer as the formula computed directly on uint8 values.
"""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.isa import requant
from systolic.reference.kernels.conv import conv_output_shape
from systolic.reference.ops._shared import int_attr, ints_attr
from systolic.reference.ops.base import Op, TensorInfo

__all__ = [
    "EIGHT_BIT_TYPES",
    "OutputStage",
    "check_eight_bit",
    "int_list_attr",
    "output_stage",
    "round_shift",
    "type_range",
]

EIGHT_BIT_TYPES = frozenset({DataType.UINT8, DataType.INT8})
"""Activation types the fused operators read and write."""

_FLIP = 128
"""uint8 values are carried as int8 by subtracting 128 (flipping the top bit)."""


def type_range(dtype: DataType) -> tuple[int, int]:
    """Return (lowest, highest) value of an 8-bit element type."""
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def check_eight_bit(op: Op, info: TensorInfo, what: str) -> None:
    """Raise ModelError unless `info` is uint8 or int8."""
    if info.dtype not in EIGHT_BIT_TYPES:
        raise op.error(f"{what} has element type {info.dtype.short}; expected u8 or i8")


def int_list_attr(op: Op, name: str) -> tuple[int, ...]:
    """Return required integer-list attribute `name`."""
    values = ints_attr(op, name)
    if values is None:
        raise op.error(f"required attribute {name!r} is missing")
    return values


def _checked_type(op: Op, name: str, default: int | None = None) -> DataType:
    code = int_attr(op, name, -1 if default is None else default)
    if code == -1:
        raise op.error(f"required attribute {name!r} is missing")
    if code not in (DataType.UINT8, DataType.INT8):
        raise op.error(f"{name} must be 2 (uint8) or 3 (int8), got {code}")
    return DataType(code)


class OutputStage:
    """The attributes y_zero_point, y_type (unless `dtype` is given), y_lo, y_hi of a fused
    operator, checked: zero point and bounds lie in the output type, y_lo <= y_hi."""

    def __init__(self, op: Op, dtype: DataType | None = None, *, with_zero_point: bool = True):
        self.dtype = _checked_type(op, "y_type") if dtype is None else dtype
        lo, hi = type_range(self.dtype)
        self.zero_point = int_attr(op, "y_zero_point", 0) if with_zero_point else 0
        self.lo = int_attr(op, "y_lo", lo)
        self.hi = int_attr(op, "y_hi", hi)
        for name, value in (("y_zero_point", self.zero_point), ("y_lo", self.lo),
                            ("y_hi", self.hi)):
            if not lo <= value <= hi:
                raise op.error(f"{name} {value} is outside the output type's range "
                               f"[{lo}, {hi}]")
        if self.lo > self.hi:
            raise op.error(f"y_lo ({self.lo}) must not exceed y_hi ({self.hi})")

    @property
    def flip(self) -> int:
        """128 for uint8 outputs (carried as int8), else 0."""
        return _FLIP if self.dtype == DataType.UINT8 else 0

    def finish(self, q: np.ndarray) -> np.ndarray:
        """Return clamp(q + y_zero_point, y_lo, y_hi) in the output type (q: rounded int64)."""
        y = np.clip(q + self.zero_point, self.lo, self.hi)
        return np.asarray(y.astype(self.dtype.numpy))


def check_zero_points(op: Op, checks: Sequence[tuple[int, TensorInfo, str]]) -> None:
    """Refuse a zero point outside its operand's type: `checks` holds (zero point, operand,
    attribute name) triples."""
    for zp, info, name in checks:
        lo, hi = type_range(info.dtype)
        if not lo <= zp <= hi:
            raise op.error(f"{name} {zp} is outside its operand's range [{lo}, {hi}]")


def round_shift(values: np.ndarray, right_shift: np.ndarray | int) -> np.ndarray:
    """Return round_half_to_even(values / 2**right_shift) as int64, exactly.

    `values` (int64) and `right_shift` (0..62) broadcast. Computed with int64 shifts when
    |values| < 2**62 (always for the fused ops' operands), else with the golden model's exact
    `round_shift_half_even` on Python integers; both give the same integers.
    """
    v = np.asarray(values, dtype=np.int64)
    n = np.asarray(right_shift, dtype=np.int64)
    if v.size and int(np.max(np.abs(v))) >= 2**62:
        return np.asarray(requant.round_shift_half_even(v, n).astype(np.int64))
    floor = v >> n
    remainder = v - (floor << n)
    half = np.left_shift(np.int64(1), np.maximum(n - 1, 0))
    up = (n > 0) & ((remainder > half) | ((remainder == half) & ((floor & 1) == 1)))
    return np.asarray(floor + up.astype(np.int64))


def output_stage(
    acc: np.ndarray,
    bias: np.ndarray | int,
    multiplier: np.ndarray | Sequence[int] | int,
    shift: np.ndarray | Sequence[int] | int,
    stage: OutputStage,
    channel_axis: int | None,
) -> np.ndarray:
    """Return clamp(requant(acc + bias, M, s) + y_zero_point, y_lo, y_hi) in the stage's type.

    `acc` is the exact int64 accumulator; `bias`, `multiplier` and `shift` are scalars, 1-D
    with one value per channel along `channel_axis` of `acc`, or (`channel_axis` None) arrays
    that broadcast against `acc`. The arithmetic is `systolic.isa.requant.requantize`'s;
    when acc + bias fits 31 bits (every 8-bit layer the mapper accepts) it is computed in
    int64 (the product stays below 2**62), otherwise by the golden function itself.
    """
    shape = [1] * acc.ndim
    if channel_axis is not None:
        shape[channel_axis] = -1

    def along(values: np.ndarray | Sequence[int] | int) -> np.ndarray:
        array = np.asarray(values, dtype=np.int64)
        return array.reshape(shape) if channel_axis is not None and array.ndim == 1 else array

    flip = stage.flip
    acc64 = acc.astype(np.int64, copy=False)
    b, m, s = along(bias), along(multiplier), along(shift)
    total = acc64 + b
    fits = not total.size or int(np.max(np.abs(total))) < 2**31
    if not fits or np.any(m < 0) or np.any(m >= 2**31):
        y = requant.requantize(acc64, b, m, s, stage.zero_point - flip, stage.lo - flip,
                               stage.hi - flip)
        return np.asarray((y.astype(np.int64) + flip).astype(stage.dtype.numpy))
    if np.any(s < requant.SHIFT_MIN) or np.any(s > requant.SHIFT_MAX):
        raise ValueError(f"shift must lie in [{requant.SHIFT_MIN}, {requant.SHIFT_MAX}]")
    q = round_shift(total * m, s + requant.MULTIPLIER_BITS)
    return stage.finish(q)


class PoolWindowOp(Op):
    """Base of QMaxPool and QAveragePool: their window attributes and output shape.

    `parse_window` reads kernel_shape, strides (default 1) and pads (begins then ends,
    default 0) and checks them (padding smaller than the kernel: every window holds an input
    cell); `window_output_shape` checks X [N, C, *spatial] and returns the output's spatial
    shape.
    """

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    pads: tuple[int, ...]

    def parse_window(self, padding_note: str = "") -> None:
        self.kernel = int_list_attr(self, "kernel_shape")
        rank = len(self.kernel)
        self.strides = ints_attr(self, "strides") or (1,) * rank
        self.pads = ints_attr(self, "pads") or (0,) * (2 * rank)
        if len(self.strides) != rank or len(self.pads) != 2 * rank:
            raise self.error(f"strides need {rank} values and pads {2 * rank}, as kernel_shape")
        if min((*self.kernel, *self.strides)) < 1 or min(self.pads) < 0:
            raise self.error("kernel_shape and strides must be positive, pads not negative")
        if any(p >= k for p, k in zip(self.pads, self.kernel * 2, strict=True)):
            raise self.error(f"pads {list(self.pads)} must be smaller than kernel_shape "
                             f"{list(self.kernel)}{padding_note}")

    def window_output_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) != len(self.kernel) + 2:
            raise self.error(f"X {list(shape)} must be [N, C] plus {len(self.kernel)} spatial "
                             "axes, as kernel_shape")
        ones = (1,) * len(self.kernel)
        out = conv_output_shape(shape[2:], self.kernel, self.strides, self.pads, ones)
        if min(out) < 1:
            raise self.error(f"kernel {list(self.kernel)} does not fit input {list(shape)}")
        return out
