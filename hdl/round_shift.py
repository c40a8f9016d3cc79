"""Combinational logic of an arithmetic right shift that rounds half to even.

`round_shift_parts(value, amount)` splits round_half_to_even(value / 2**amount) into the floor
of the quotient and a one-bit round-up, so a pipeline can register the wide shifter's result
before the (narrow) increment. No division: one barrel shifter, a thermometer mask and an
OR tree.
"""

from amaranth.hdl import Cat, Const, Value

__all__ = ["round_shift_parts"]


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
