# amaranth: UnusedElaboratable=no

"""Reciprocal: min(floor(2^46 / S), 2^32 - 1) for edge and random divisors, `done` exactly
RECIPROCAL_CYCLES after `start`, against `sim/golden/softmax`'s constants."""

import numpy as np
from amaranth.sim import Simulator

from systolic.hdl.divider import RECIPROCAL_CYCLES, Reciprocal
from systolic.sim.golden.softmax import RECIPROCAL_CAP, RECIPROCAL_NUMERATOR


def quotients(divisors: list[int]) -> list[tuple[int, int]]:
    """Return (cycles from start to done, quotient) for each divisor, one after the other."""
    dut = Reciprocal()
    results: list[tuple[int, int]] = []

    async def testbench(ctx):
        for divisor in divisors:
            ctx.set(dut.start, 1)
            ctx.set(dut.divisor, divisor)
            await ctx.tick()
            ctx.set(dut.start, 0)
            cycles = 1
            while not ctx.get(dut.done):
                await ctx.tick()
                cycles += 1
                assert cycles < 100
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
