"""Golden model of the output stage (requantization), bit for bit as `systolic.hdl.output_stage`.

The arithmetic is the numeric contract's "Output stage" (docs/numeric-contract.md), per element:

    x = acc + bias                          exact
    p = x * M                               exact (acc_width + 33 bits: up to 65 for int32 acc)
    q = round_half_to_even(p / 2**(31 + s)) s in [-31, 31], so a right shift by 0..62
    y = clamp(q + zero_point, lo, hi)       int8

The product of a 33-bit sum and a 32-bit multiplier does not fit numpy's int64, so the model
computes with Python integers in object arrays: exact for every input, vectorised, and fast
enough for the tile sizes tests use (about a microsecond per element).
"""

import math

import numpy as np

from systolic.errors import UnsupportedError

__all__ = [
    "MULTIPLIER_BITS",
    "OUT_MAX",
    "OUT_MIN",
    "SHIFT_MAX",
    "SHIFT_MIN",
    "MultiplierRangeError",
    "extremes",
    "quantize_multiplier",
    "requantize",
    "round_shift_half_even",
    "round_shift_int64",
    "scaled_round_shift",
    "sign_extend",
]

MULTIPLIER_BITS = 31
"""A normalised multiplier M lies in [2**30, 2**31): a positive int32 with bit 30 set."""

SHIFT_MIN = -31
"""The smallest shift s: a total right shift 31 + s of 0 (reals up to just below 2**31)."""

SHIFT_MAX = 31
"""The largest shift s: a total right shift of 62 (reals down to 2**-32)."""

OUT_MIN, OUT_MAX = -128, 127
"""The output type's range: int8 (uint8 outputs are carried as int8, top bit flipped)."""

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class MultiplierRangeError(UnsupportedError, ValueError):
    """A real requantization multiplier the output stage cannot represent."""


def quantize_multiplier(real: float) -> tuple[int, int]:
    """Return (M, s) with real == M * 2**-(31 + s) as closely as 31 bits allow.

    M is `real` scaled by a power of two into [2**30, 2**31) and rounded half to even (a
    relative error of at most 2**-31; none for a float32 `real`, whose 24 significand bits M
    holds exactly), s in [SHIFT_MIN, SHIFT_MAX]. `real == 0` gives (0, 0), which makes every
    result the zero point. Raises MultiplierRangeError for a negative or non-finite `real`, and
    for one outside [2**-32, 2**31) after rounding, which no shift in range represents.
    """
    real = float(real)
    if not math.isfinite(real) or real < 0.0:
        raise MultiplierRangeError(
            f"requantization multiplier {real!r} is not a finite non-negative number; "
            "check the layer's input, weight and output scales"
        )
    if real == 0.0:
        return 0, 0
    fraction, exponent = math.frexp(real)  # real == fraction * 2**exponent, fraction in [0.5, 1)
    multiplier = round(fraction * 2.0**MULTIPLIER_BITS)  # exact scaling; round() ties to even
    if multiplier == 2**MULTIPLIER_BITS:  # rounded up out of range: renormalise
        multiplier //= 2
        exponent += 1
    shift = -exponent
    if shift > SHIFT_MAX:
        raise MultiplierRangeError(
            f"requantization multiplier {real!r} is below 2**-32, the smallest the output stage "
            "represents; quantize the layer with a smaller output scale"
        )
    if shift < SHIFT_MIN:
        raise MultiplierRangeError(
            f"requantization multiplier {real!r} is not below 2**31, the largest the output stage "
            "represents; quantize the layer with a larger output scale"
        )
    return multiplier, shift


def round_shift_half_even(value: np.ndarray, right_shift: np.ndarray | int) -> np.ndarray:
    """Return round_half_to_even(value / 2**right_shift) elementwise, exactly.

    `value` and `right_shift` are integer arrays (any dtype, object arrays of Python ints
    included) that broadcast together; every shift must be >= 0. The result is an object array
    of Python ints.
    """
    v_b, r_b = np.broadcast_arrays(np.asarray(value), np.asarray(right_shift))
    shape = v_b.shape
    v = v_b.reshape(-1).astype(object)  # 1-D: object arithmetic on 0-d arrays yields scalars
    r = r_b.reshape(-1).astype(object)
    if np.any(r < 0):
        raise ValueError("right_shift must not be negative")
    floor = v >> r
    twice_remainder = (v - (floor << r)) << 1  # in [0, 2**(r + 1))
    unit = np.ones_like(r) << r  # 2**r, exact for any r as Python ints
    round_up = (twice_remainder > unit) | ((twice_remainder == unit) & ((floor & 1) == 1))
    return np.asarray(floor + round_up.astype(bool).astype(int)).reshape(shape)


_INT64_SAFE = 2**62
"""Magnitudes below this leave int64 headroom for the rounding arithmetic."""
_SHIFT_SAFE = 62


def extremes(values: np.ndarray) -> tuple[int, int]:
    """Return (min, max) of a non-empty integer array as Python ints (small arrays through
    Python lists, which is faster than two numpy reductions)."""
    if values.size <= 64:
        items = values.ravel().tolist()
        return int(min(items)), int(max(items))
    return int(values.min()), int(values.max())


def sign_extend(values: np.ndarray, width: int) -> np.ndarray:
    """Return the low `width` bits of int64 `values` as signed numbers (a new array, or
    `values` itself for a width of 64)."""
    if width >= 64:
        return values
    half = 1 << (width - 1)
    low = values & ((1 << width) - 1)
    low ^= half
    low -= half
    return low


def _magnitude(values: np.ndarray) -> int:
    if not values.size:
        return 0
    least, most = extremes(values)
    return max(most, -least)


def round_shift_int64(value: np.ndarray, right_shift: np.ndarray | int) -> np.ndarray:
    """Return `round_shift_half_even(value, right_shift)` as int64, for an integer `value`
    array and shifts >= 0: computed in int64 when that is exact (every |value| < 2**62, every
    shift <= 62), else with Python integers. The result must fit int64."""
    v = np.asarray(value)
    r = np.asarray(right_shift)
    if (v.dtype.kind not in "iu" or r.dtype.kind not in "iu" or _magnitude(v) >= _INT64_SAFE
            or (r.size and (int(r.min()) < 0 or int(r.max()) > _SHIFT_SAFE))):
        return np.asarray(round_shift_half_even(v, r).astype(np.int64))
    v = v.astype(np.int64, copy=False)
    r = r.astype(np.int64, copy=False)
    floor = v >> r
    remainder = v - (floor << r)  # in [0, 2**r)
    half = np.left_shift(1, np.maximum(r - 1, 0))  # 2**(r-1); for r = 0 the remainder is 0
    round_up = (remainder > half) | ((remainder == half) & ((floor & 1) == 1) & (r > 0))
    result: np.ndarray = floor + round_up
    return result


def scaled_round_shift(value: np.ndarray, multiplier: int, right_shift: int) -> np.ndarray:
    """Return round_half_to_even(value * multiplier / 2**right_shift) as int64, exactly
    (`value` an int64 array, `multiplier` and `right_shift` >= 0 Python integers)."""
    v = np.asarray(value)
    if _magnitude(v) * abs(int(multiplier)) < _INT64_SAFE:
        return round_shift_int64(v.astype(np.int64) * int(multiplier), right_shift)
    return np.asarray(round_shift_half_even(v.astype(object) * int(multiplier),
                                            right_shift).astype(np.int64))


def _check_range(name: str, values: np.ndarray, low: int, high: int) -> int:
    """Raise ValueError unless every value lies in [low, high]; return the largest magnitude."""
    if not values.size:
        return 0
    least, most = extremes(values)
    if least < low or most > high:
        raise ValueError(f"{name} must lie in [{low}, {high}]")
    return max(most, -least)


def requantize(
    acc: np.ndarray,
    bias: np.ndarray,
    multiplier: np.ndarray,
    shift: np.ndarray,
    zero_point: int,
    lo: int,
    hi: int,
) -> np.ndarray:
    """Return clamp(round_half_to_even((acc + bias) * M / 2**(31 + s)) + zero_point, lo, hi).

    `acc` holds accumulator values (int64, already wrapped to the accumulator width); `bias`
    (int32 range), `multiplier` (int32 range) and `shift` ([SHIFT_MIN, SHIFT_MAX]) broadcast
    against it, typically one value per output channel along the last axis. `zero_point`, `lo`
    and `hi` are scalars in the int8 range with lo <= hi (a fused ReLU raises lo to the zero
    point, ReLU6 and Clip also lower hi). Every intermediate is exact. Returns int8 in the
    broadcast shape. Raises ValueError for a parameter outside its range.
    """
    acc_i = np.asarray(acc)
    bias_i = np.asarray(bias)
    mult_i = np.asarray(multiplier)
    shift_i = np.asarray(shift)
    arrays = {"acc": acc_i, "bias": bias_i, "multiplier": mult_i, "shift": shift_i}
    for name, array in arrays.items():
        if array.dtype.kind not in "iu":
            raise ValueError(f"{name} must be an integer array, got dtype {array.dtype}")
    bias_bound = _check_range("bias", bias_i, INT32_MIN, INT32_MAX)
    mult_bound = _check_range("multiplier", mult_i, INT32_MIN, INT32_MAX)
    _check_range("shift", shift_i, SHIFT_MIN, SHIFT_MAX)
    for name, value in (("zero_point", zero_point), ("lo", lo), ("hi", hi)):
        if not OUT_MIN <= int(value) <= OUT_MAX:
            raise ValueError(f"{name} must lie in [{OUT_MIN}, {OUT_MAX}], got {value}")
    if int(lo) > int(hi):
        raise ValueError(f"lo ({lo}) must not exceed hi ({hi})")

    right = shift_i.astype(np.int64) + MULTIPLIER_BITS
    x_bound = _magnitude(acc_i) + bias_bound  # |acc + bias| <= x_bound
    if x_bound * mult_bound < _INT64_SAFE:  # then acc + bias and the product fit int64
        x64 = acc_i.astype(np.int64) + bias_i.astype(np.int64)
        q64 = round_shift_int64(x64 * mult_i.astype(np.int64), right)
        y64 = np.minimum(np.maximum(q64 + int(zero_point), int(lo)), int(hi))
        return np.asarray(y64, dtype=np.int8)
    x = acc_i.astype(object) + bias_i.astype(object)
    product = x * mult_i.astype(object)
    q = round_shift_half_even(product, right)
    y = np.minimum(np.maximum(q + int(zero_point), int(lo)), int(hi))
    return np.asarray(y.astype(np.int64), dtype=np.int8)
