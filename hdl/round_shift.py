"""Combinational logic of an arithmetic right shift that rounds half to even.

`round_shift_parts(value, amount)` splits round_half_to_even(value / 2**amount) into the floor
of the quotient and a one-bit round-up, so a pipeline can register the wide shifter's result
before the (narrow) increment. No division: one barrel shifter, a thermometer mask and an
OR tree.

`coarse_shift` and `fine_round_parts` compute the same over two pipeline stages: the first
shifts by a multiple of COARSE_STEP and keeps only a narrow, saturated window of the result
(with the sticky bits it dropped), the second shifts that window by the rest and rounds.
`fine_round_clamped` also clamps the floor, comparing the window with bounds that
`clamp_bounds` registers (the only register here).
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib.data import StructLayout

__all__ = [
    "COARSE_STEP", "clamp_bounds", "coarse_shift", "fine_round_clamped", "fine_round_parts",
    "round_shift_parts",
]

COARSE_STEP = 8
"""`coarse_shift` shifts by COARSE_STEP times its amount; `fine_round_parts` by 0..7 more."""

_FINE_BITS = 3  # log2(COARSE_STEP)


def round_shift_parts(value: Value, amount: Value) -> tuple[Value, Value]:
    """Return (floor, round_up) with floor + round_up == round_half_to_even(value / 2**amount).

    `value` is a signed value of width w, `amount` an unsigned shift amount; shifts of w or
    more give floor = -1 or 0 (the sign) as an arithmetic shift does. `floor` is signed, w bits.
    `round_up` is the guard bit (bit amount-1 of `value`) and'ed with "more than half or odd":
    the sticky OR of the bits below the guard, or the floor's lowest bit (ties to even).

    Cost for w bits and a k-bit amount: a w+1-bit arithmetic barrel shifter (k mux levels),
    w comparators of `amount` against constants (a thermometer decoder) and a w-input OR.
    """
    width = len(value)
    shifted = (value << 1) >> amount  # floor(value / 2**(amount - 1)): floor and guard bit
    floor = shifted[1:].as_signed()
    guard = shifted[0]
    # Bit j of `value` lies below the guard bit exactly when j <= amount - 2.
    sticky_mask = Cat(*(Const(j + 2, len(amount) + 1) <= amount for j in range(width)))
    sticky = (value.as_unsigned() & sticky_mask).any()
    round_up = guard & (sticky | floor[0])
    return floor, round_up


def coarse_shift(value: Value, high: Value, keep: int) -> tuple[Value, Value]:
    """First stage of a two-stage rounding shift by a = COARSE_STEP * high + low.

    Return (window, sticky) for signed `value` (w bits) and unsigned `high`:

    - `window`: u = (value * 4) >> (COARSE_STEP * high) (arithmetic; the two extra low bits
      carry the guard and the first sticky bit to the second stage) as a signed `keep`-bit
      value, saturated to [-2**(keep - 1), 2**(keep - 1) - 1] when u does not fit;
    - `sticky`: the OR of the bits of `value * 4` below COARSE_STEP * high (all of them lie
      below the final guard bit).

    Cost: a 2**len(high) : 1 mux of `keep` bits, per amount an equality test of `value`'s top
    bits against its sign (whether u fits), and an OR tree of w bits in groups of COARSE_STEP.
    """
    if keep < COARSE_STEP + 2:
        raise ValueError(f"keep must be at least {COARSE_STEP + 2}, not {keep}")
    quadrupled = Cat(Const(0, 2), value)  # bit i is bit i - 2 of value
    top = len(quadrupled) - 1

    def bit(i: int) -> Value:
        return quadrupled[min(i, top)]

    sign = value[-1]
    amounts = range(2 ** len(high))
    candidates = Array(Cat(*(bit(COARSE_STEP * h + j) for j in range(keep))).as_signed()
                       for h in amounts)
    # u fits in keep bits when its bits from keep - 1 up (quadrupled's bits from
    # COARSE_STEP * h + keep - 1 up) all equal the sign.
    fits = Array((quadrupled[min(COARSE_STEP * h + keep - 1, top):] == 0) | (
        quadrupled[min(COARSE_STEP * h + keep - 1, top):].all()) for h in amounts)
    saturated = Cat((~sign).replicate(keep - 1), sign).as_signed()
    window = Mux(fits[high], candidates[high], saturated)
    groups = [quadrupled[COARSE_STEP * g:COARSE_STEP * (g + 1)].any() for g in amounts]
    # Group g lies wholly below the window when g < high (never for the last group: a
    # comparison that is constant there would be a lint warning).
    sticky = Cat(*(groups[g] & (Const(g, len(high) + 1) < high) for g in amounts[:-1])).any()
    return window, sticky


def fine_round_parts(window: Value, sticky: Value, low: Value) -> tuple[Value, Value]:
    """Second stage: return (floor, round_up) from `coarse_shift`'s (window, sticky) and the
    amount's low bits `low` (unsigned, < COARSE_STEP).

    When the window was not saturated, floor + round_up == round_half_to_even(value / 2**a)
    for a = COARSE_STEP * high + low, and floor == value >> a. When it was, floor is
    (2**(keep - 1) - 1) >> (low + 2) or -2**(keep - 1) >> (low + 2): at least
    2**(keep - 10) - 1, or at most -2**(keep - 10), with the value's sign, and round_up is
    meaningless; a caller that clamps the floor to a range inside those bounds (and whose
    clamp does not depend on round_up) gets the exact result. `floor` is signed,
    len(window) - 2 bits.
    """
    if len(low) > _FINE_BITS:
        raise ValueError(f"low must have at most {_FINE_BITS} bits, not {len(low)}")
    shifted = window >> low
    floor = shifted[2:].as_signed()
    guard = shifted[1]
    # Bits 0 .. low of the window lie below the guard (bit low + 1).
    below = Cat(Const(1, 1), *(Const(j, _FINE_BITS + 1) <= low for j in range(1, COARSE_STEP)))
    rest = (window[:COARSE_STEP] & below).any()
    round_up = guard & (sticky | rest | floor[0])
    return floor, round_up


def clamp_bounds(m: Module, low: Value, floor_min: int, floor_max: int,
                 name: str = "clamp_bounds") -> Value:
    """Add a register, loaded every cycle, of the window bounds that `fine_round_clamped`
    compares with for the amount's low bits `low`; return it ({below, above}, signed).

    floor = window >> (low + 2) (arithmetic), so floor < floor_min exactly when
    window < below = floor_min * 2**(low + 2), and floor > floor_max exactly when
    window >= above = (floor_max + 1) * 2**(low + 2). The register holds the bounds of `low`'s
    value of the previous cycle: `low` must be stable one cycle longer than the fine stage
    alone would need. (Selecting among per-amount comparisons after them, as this did before,
    put an 8:1 mux and its select after the comparators' carry chains: the vector unit's
    critical path, 91.5 MHz alone.)
    """
    lows = range(2 ** len(low))
    below = [floor_min * 2 ** (k + 2) for k in lows]
    above = [(floor_max + 1) * 2 ** (k + 2) for k in lows]
    width = max(Const(v).shape().width for v in below + above) + 1
    bounds = Signal(StructLayout({"below": signed(width), "above": signed(width)}), name=name)
    m.d.sync += [bounds.below.eq(Array(Const(v, signed(width)) for v in below)[low]),
                 bounds.above.eq(Array(Const(v, signed(width)) for v in above)[low])]
    return bounds


def fine_round_clamped(window: Value, sticky: Value, low: Value, bounds: Value, floor_min: int,
                       floor_max: int) -> tuple[Value, Value]:
    """`fine_round_parts` with its floor clamped to [floor_min, floor_max] (floor_min < 0 <=
    floor_max), the clamp decided from `window` beside the shift instead of after it: two
    comparisons of the window with `bounds` (`clamp_bounds` of the same `low`, floor_min and
    floor_max), in parallel with the shifter, and two muxes after them.
    Return (clamped floor, round_up) with round_up as `fine_round_parts`'.
    """
    floor, round_up = fine_round_parts(window, sticky, low)
    return Mux(window < bounds.below, floor_min,
               Mux(window >= bounds.above, floor_max, floor)), round_up
