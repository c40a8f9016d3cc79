"""`Reciprocal`: a sequential radix-2 divider for SOFTMAX's r = min(floor(2^46 / S), 2^32 - 1)."""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["NUMERATOR_LOG2", "QUOTIENT_BITS", "RECIPROCAL_CYCLES", "Reciprocal"]

NUMERATOR_LOG2 = 46
"""The dividend is 2^46 (docs/isa.md, "SOFTMAX and the exp table")."""
QUOTIENT_BITS = 32
"""The quotient is capped to 2^32 - 1."""
BITS_PER_CYCLE = 2
RECIPROCAL_CYCLES = QUOTIENT_BITS // BITS_PER_CYCLE + 1
"""Cycles from `start` to `done`: 17 (16 steps and the result register)."""


class Reciprocal(wiring.Component):
    """Compute `quotient = min(floor(2^46 / divisor), 2^32 - 1)` (the cap also for 0).

    Restoring division, two quotient bits per cycle (two 33-bit compare-and-subtract steps in
    series). When `divisor <= 2^14` the quotient is at least 2^32 (or undefined) and the cap
    is the answer; otherwise the partial remainder starts at 2^14 (< divisor: the dividend's
    bits above the 32-bit quotient window) and each step doubles it (the dividend's lower bits
    are all 0), subtracting the divisor when it fits.

    Members
    -------
    start : ``In(1)``
        Pulse: take `divisor`.
    divisor : ``In(unsigned(32))``
    done : ``Out(1)``
        Pulse in cycle t + 17 for a `start` in cycle t; `quotient` is valid from then until
        the next `start`.
    quotient : ``Out(unsigned(32))``
    """

    def __init__(self):
        super().__init__({
            "start": In(1),
            "divisor": In(unsigned(32)),
            "done": Out(1),
            "quotient": Out(unsigned(QUOTIENT_BITS)),
        })

    def elaborate(self, platform):
        m = Module()
        divisor = Signal(32)
        remainder = Signal(33)
        capped = Signal()
        steps = Signal(range(RECIPROCAL_CYCLES))
        small = self.divisor <= (1 << (NUMERATOR_LOG2 - QUOTIENT_BITS))

        rem_a = Signal(34)
        bit_a = Signal()
        rem_b = Signal(34)
        bit_b = Signal()
        doubled_a = remainder << 1
        doubled_b = rem_a << 1
        m.d.comb += [
            bit_a.eq(doubled_a >= divisor),
            rem_a.eq(Mux(bit_a, doubled_a - divisor, doubled_a)),
            bit_b.eq(doubled_b >= divisor),
            rem_b.eq(Mux(bit_b, doubled_b - divisor, doubled_b)),
        ]
        m.d.sync += self.done.eq(~self.start & (steps == 1))
        with m.If(self.start):
            m.d.sync += [divisor.eq(self.divisor), capped.eq(small), steps.eq(RECIPROCAL_CYCLES - 1),
                         remainder.eq(1 << (NUMERATOR_LOG2 - QUOTIENT_BITS)),
                         self.quotient.eq(0)]
        with m.Elif(steps != 0):
            m.d.sync += [steps.eq(steps - 1), remainder.eq(rem_b),
                         self.quotient.eq((self.quotient << 2) | (bit_a << 1) | bit_b)]
            with m.If((steps == 1) & capped):
                m.d.sync += self.quotient.eq((1 << QUOTIENT_BITS) - 1)
        return m
