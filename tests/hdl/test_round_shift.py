"""round_shift_parts against Fractions: every 7-bit signed value at every shift amount 0..9."""

from fractions import Fraction

from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from systolic.hdl.round_shift import round_shift_parts


def test_floor_plus_round_up_is_round_half_to_even():
    value = Signal(signed(7))
    amount = Signal(4)
    floor_out = Signal(signed(7))
    round_up_out = Signal()
    m = Module()
    floor, round_up = round_shift_parts(value, amount)
    m.d.comb += [floor_out.eq(floor), round_up_out.eq(round_up)]
    mismatches = []

    async def testbench(ctx):
        for v in range(-64, 64):
            for r in range(10):
                ctx.set(value, v)
                ctx.set(amount, r)
                got = ctx.get(floor_out) + ctx.get(round_up_out)
                assert ctx.get(floor_out) == v >> r
                if got != round(Fraction(v, 2**r)):
                    mismatches.append((v, r, got))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert mismatches == []
