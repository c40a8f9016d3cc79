"""round_shift_parts against Fractions: every 7-bit signed value at every shift amount 0..9;
coarse_shift + fine_round_parts against the same on wide random values at every amount 0..63."""

import random
from fractions import Fraction

import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from systolic.hdl.round_shift import (
    clamp_bounds,
    coarse_shift,
    fine_round_clamped,
    fine_round_parts,
    round_shift_parts,
)


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


def _two_stage_results(width: int, keep: int, values: list[int], amounts: range):
    """Run coarse_shift then fine_round_parts combinationally; return {(v, a): (floor, up)}."""
    value = Signal(signed(width))
    amount = Signal(6)
    floor_out = Signal(signed(keep - 2))
    round_up_out = Signal()
    m = Module()
    window, sticky = coarse_shift(value, amount[3:], keep)
    floor, round_up = fine_round_parts(window, sticky, amount[:3])
    m.d.comb += [floor_out.eq(floor), round_up_out.eq(round_up)]
    results = {}

    async def testbench(ctx):
        for v in values:
            for a in amounts:
                ctx.set(value, v)
                ctx.set(amount, a)
                results[v, a] = (ctx.get(floor_out), ctx.get(round_up_out))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    return results


def test_two_stage_shift_is_exact_or_saturated_beyond_its_bound():
    width, keep = 40, 12
    rng = random.Random(5)
    values = [0, 1, -1, 2**39 - 1, -(2**39), 2**11, -(2**11) - 1]
    values += [rng.randrange(-(2**39), 2**39) >> rng.randrange(40) for _ in range(60)]
    results = _two_stage_results(width, keep, values, range(0, 64, 1))
    bound = 2 ** (keep - 10)  # fine_round_parts: a saturated floor lies beyond +-(bound - 1)
    saturated = 0
    for (v, a), (floor, round_up) in results.items():
        if -(2 ** (keep - 1)) <= (4 * v) >> (8 * (a // 8)) < 2 ** (keep - 1):
            assert floor == v >> a, (v, a)
            assert floor + round_up == round(Fraction(v, 2**a)), (v, a)
        else:
            saturated += 1
            assert (floor >= bound - 1) if v >= 0 else (floor <= -bound), (v, a, floor)
    assert saturated > 100  # both the exact and the saturated branch were exercised


def test_coarse_shift_rejects_a_narrow_window():
    with pytest.raises(ValueError, match=r"^keep must be at least 10, not 9$"):
        coarse_shift(Signal(signed(20)), Signal(3), 9)


def test_fine_round_clamped_is_the_clamped_fine_floor():
    """Every 11-bit window at every low amount: the clamp decided on the window with the
    registered `clamp_bounds` equals clamping fine_round_parts' floor, and round_up is
    unchanged."""
    keep, floor_min, floor_max = 11, -5, 3
    window, low = Signal(signed(keep)), Signal(3)
    outs = [Signal(signed(keep)), Signal(), Signal(signed(keep)), Signal()]
    m = Module()
    bounds = clamp_bounds(m, low, floor_min, floor_max)
    clamped, up = fine_round_clamped(window, Signal(), low, bounds, floor_min, floor_max)
    floor, plain_up = fine_round_parts(window, Signal(), low)
    m.d.comb += [o.eq(v) for o, v in zip(outs, (clamped, up, floor, plain_up), strict=True)]
    checked = set()

    async def testbench(ctx):
        for a in range(8):
            ctx.set(low, a)
            await ctx.tick()  # the bounds register follows `low` one cycle later
            for w in range(-(2 ** (keep - 1)), 2 ** (keep - 1)):
                ctx.set(window, w)
                got, got_up, full, full_up = (ctx.get(o) for o in outs)
                assert full == w >> (a + 2), (w, a)
                assert got == min(max(full, floor_min), floor_max), (w, a, got)
                assert got_up == full_up
                checked.add(got)

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert checked == set(range(floor_min, floor_max + 1))
