# amaranth: UnusedElaboratable=no

"""Reciprocal: min(floor(2^46 / S), 2^32 - 1) for edge and random divisors, `done` exactly
RECIPROCAL_CYCLES after `start`, against `sim/golden/softmax`'s constants; the wide mode's
pairs of floor(2^60 / Vn), most significant first, `done` WIDE_CYCLES after `start`."""

import numpy as np
from amaranth.sim import Simulator

from systolic.hdl.divider import RECIPROCAL_CYCLES, WIDE_CYCLES, WIDE_PAIRS, Reciprocal
from systolic.sim.golden.softmax import RECIPROCAL_CAP, RECIPROCAL_NUMERATOR


def quotients(divisors: list[int], *, wide: bool = False) -> list[tuple[int, int]]:
    """Return (cycles from start to done, quotient) for each divisor, one after the other;
    with `wide` the quotient is the pairs' bits, most significant first."""
    dut = Reciprocal()
    results: list[tuple[int, int]] = []

    async def testbench(ctx):
        for divisor in divisors:
            ctx.set(dut.start, 1)
            ctx.set(dut.wide, wide)
            ctx.set(dut.divisor, divisor)
            await ctx.tick()
            ctx.set(dut.start, 0)
            cycles, pairs = 1, []
            while not ctx.get(dut.done):
                if ctx.get(dut.pair_valid):
                    pairs.append(ctx.get(dut.pair))
                await ctx.tick()
                cycles += 1
                assert cycles < 100
            if wide:
                assert ctx.get(dut.pair_valid)
                pairs.append(ctx.get(dut.pair))
                assert len(pairs) == WIDE_PAIRS
                results.append((cycles, sum(p << 2 * (WIDE_PAIRS - 1 - j)
                                            for j, p in enumerate(pairs))))
            else:
                results.append((cycles, ctx.get(dut.quotient)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return results


def test_edges_and_random_divisors() -> None:
    edges = [0, 1, 2**14 - 1, 2**14, 2**14 + 1, 2**15, 3 * 2**14 + 7, 2**31, 2**32 - 1]
    divisors = edges + [int(v) for v in np.random.default_rng(1).integers(1, 2**32, 40)]
    expected = [(RECIPROCAL_CYCLES, min(RECIPROCAL_NUMERATOR // max(d, 1), RECIPROCAL_CAP))
                for d in divisors]
    assert quotients(divisors) == expected


def test_wide_pairs_of_two_to_the_60_over_vn() -> None:
    """Vn from 1 (quotient 2^60) to 2^30 - 1."""
    edges = [1, 2, 3, 2**28, 2**28 + 1, 2**29 + 12345, 2**30 - 1]
    rng = np.random.default_rng(2)
    divisors = edges + [int(v) >> int(s) for v, s in zip(rng.integers(1, 2**30, 30),
                                                         rng.integers(0, 29, 30), strict=True)]
    divisors = [max(d, 1) for d in divisors]
    assert quotients(divisors, wide=True) == [(WIDE_CYCLES, 2**60 // d) for d in divisors]
