"""`Reciprocal`: a sequential radix-4 divider for SOFTMAX's r = min(floor(2^46 / S), 2^32 - 1)
and, in its wide mode, LAYERNORM's floor(2^60 / Vn) two quotient bits at a time."""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = [
    "NUMERATOR_LOG2", "QUOTIENT_BITS", "RECIPROCAL_CYCLES", "WIDE_CYCLES", "WIDE_DIVISOR_BITS",
    "WIDE_NUMERATOR_LOG2", "WIDE_PAIRS", "Reciprocal",
]

NUMERATOR_LOG2 = 46
"""The dividend is 2^46 (docs/isa.md, "SOFTMAX and the exp table")."""
QUOTIENT_BITS = 32
"""The quotient is capped to 2^32 - 1."""
BITS_PER_CYCLE = 2
RECIPROCAL_CYCLES = QUOTIENT_BITS // BITS_PER_CYCLE + 1
"""Cycles from `start` to `done`: 17 (16 steps and the result register)."""
WIDE_NUMERATOR_LOG2 = 60
"""The wide mode's dividend is 2^60 (docs/isa.md, "LAYERNORM")."""
WIDE_DIVISOR_BITS = 30
"""The wide mode's divisor Vn is below 2^30."""
WIDE_PAIRS = (WIDE_NUMERATOR_LOG2 + 2) // 2
"""The wide quotient's bit pairs: 31 (bits 61 .. 0; bit 61 is always 0)."""
WIDE_CYCLES = WIDE_PAIRS + 1
"""Cycles from a wide `start` to `done`, which comes with the last pair: 32."""


class Reciprocal(wiring.Component):
    """Compute `quotient = min(floor(2^46 / divisor), 2^32 - 1)` (the cap also for 0), or with
    `wide` the bit pairs of `floor(2^60 / divisor)` for `1 <= divisor < 2^30`.

    Restoring division, two quotient bits per cycle: one radix-4 digit, the three
    subtractions 4r + in - k divisor (k = 1, 2, 3; 3 divisor registered at `start`) side by
    side and the largest that does not go below 0 chosen (the same digits and remainders as two
    restoring steps in series). When `divisor <= 2^14` the quotient is at least 2^32 (or undefined) and the cap
    is the answer; otherwise the partial remainder starts at 2^14 (< divisor: the dividend's
    bits above the 32-bit quotient window) and each step doubles it (the dividend's lower bits
    are all 0), subtracting the divisor when it fits. In the wide mode the remainder starts at
    0 and the first step brings down the dividend's bit 60 (its second half); each step's two
    quotient bits leave on `pair`, most significant pair first, for a digit-serial consumer
    (`systolic.hdl.isqrt.SquareRoot`).

    Members
    -------
    start : ``In(1)``
        Pulse: take `divisor` and `wide`.
    wide : ``In(1)``
    divisor : ``In(unsigned(32))``
    done : ``Out(1)``
        Pulse in cycle t + 17 (wide: t + 32, with the last pair) for a `start` in cycle t;
        `quotient` (not wide) is valid from then until the next `start`.
    quotient : ``Out(unsigned(32))``
    pair_valid : ``Out(1)``
        Wide mode: `pair` holds the next two quotient bits (in cycles t + 2 .. t + 32).
    pair : ``Out(unsigned(2))``
    """

    def __init__(self):
        super().__init__({
            "start": In(1),
            "wide": In(1),
            "divisor": In(unsigned(32)),
            "done": Out(1),
            "quotient": Out(unsigned(QUOTIENT_BITS)),
            "pair_valid": Out(1),
            "pair": Out(unsigned(2)),
        })

    def elaborate(self, platform):
        m = Module()
        divisor = Signal(32)
        divisor3 = Signal(34, name="divisor3")  # 3 * divisor, by an adder (Yosys maps "* 3" to a DSP)
        remainder = Signal(33)
        capped = Signal()
        wide, first = Signal(name="wide_mode"), Signal(name="first_step")
        steps = Signal(range(WIDE_CYCLES))
        small = self.divisor <= (1 << (NUMERATOR_LOG2 - QUOTIENT_BITS))

        # The two restoring steps as one radix-4 digit: from r < divisor, 4r + in < 4 divisor,
        # so the digit is how many of divisor, 2 divisor, 3 divisor fit (three subtractions
        # side by side from registers, then a choice; was two compare-and-subtract steps in
        # series, the row unit's longest path in the whole design)
        shifted = Signal(35, name="four_r")
        m.d.comb += shifted.eq((remainder << 2) | (wide & first))  # wide: the dividend's bit 60
        less = [shifted - k * divisor if k != 3 else shifted - divisor3 for k in range(4)]
        fits = [Signal(name=f"fits{k}") for k in range(1, 4)]
        m.d.comb += [fit.eq(~less[k + 1][35]) for k, fit in enumerate(fits)]
        digit = Signal(2, name="digit")
        rem_next = Signal(34, name="rem_next")
        m.d.comb += [
            digit.eq(Mux(fits[2], 3, Mux(fits[1], 2, Mux(fits[0], 1, 0)))),
            rem_next.eq(Mux(fits[2], less[3], Mux(fits[1], less[2], Mux(fits[0], less[1],
                                                                          less[0])))),
        ]
        m.d.sync += [self.done.eq(~self.start & (steps == 1)), self.pair_valid.eq(0)]
        with m.If(self.start):
            m.d.sync += [divisor.eq(self.divisor), divisor3.eq((self.divisor << 1) + self.divisor),
                         wide.eq(self.wide), first.eq(1),
                         capped.eq(small & ~self.wide),
                         steps.eq(Mux(self.wide, WIDE_PAIRS, RECIPROCAL_CYCLES - 1)),
                         remainder.eq(Mux(self.wide, 0,
                                          1 << (NUMERATOR_LOG2 - QUOTIENT_BITS))),
                         self.quotient.eq(0)]
        with m.Elif(steps != 0):
            m.d.sync += [steps.eq(steps - 1), remainder.eq(rem_next), first.eq(0),
                         self.quotient.eq((self.quotient << 2) | digit),
                         self.pair_valid.eq(wide), self.pair.eq(digit)]
            with m.If((steps == 1) & capped):
                m.d.sync += self.quotient.eq((1 << QUOTIENT_BITS) - 1)
        return m
