# amaranth: UnusedElaboratable=no

"""SquareRoot: isqrt of radicands fed two bits per cycle, against math.isqrt."""

import math

import numpy as np
import pytest
from amaranth.sim import Simulator

from systolic.hdl.isqrt import SquareRoot


def roots(bits: int, radicands: list[int], *, gap: bool = False) -> list[int]:
    """Return the unit's root of each radicand, fed pair by pair (with an idle cycle between
    pairs when `gap`), one radicand after the other."""
    dut = SquareRoot(bits)
    results: list[int] = []

    async def testbench(ctx):
        for radicand in radicands:
            for j in range(bits):
                ctx.set(dut.first, j == 0)
                ctx.set(dut.pair_valid, 1)
                ctx.set(dut.pair, (radicand >> (2 * (bits - 1 - j))) & 3)
                await ctx.tick()
                ctx.set(dut.pair_valid, 0)
                if gap:
                    await ctx.tick()
            results.append(ctx.get(dut.root))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return results


def test_edges_and_random_62_bit_radicands() -> None:
    top = 1 << 62
    edges = [0, 1, 2, 3, 4, 8, 2**60, 2**60 - 1, top - 1, (2**31 - 1) ** 2, (2**31 - 1) ** 2 - 1,
             2**30, 2**32 + 2**30]
    rng = np.random.default_rng(5)
    randoms = [int(v) >> int(s) for v, s in zip(rng.integers(0, 2**62, 40, dtype=np.int64),
                                                 rng.integers(0, 60, 40), strict=True)]
    radicands = edges + randoms + [r * r for r in randoms[:10]]
    radicands = [v for v in radicands if v < top]
    assert roots(31, radicands) == [math.isqrt(v) for v in radicands]


@pytest.mark.parametrize("bits", [1, 2, 5])
def test_every_small_radicand_with_gaps(bits: int) -> None:
    radicands = list(range(1 << (2 * bits)))
    assert roots(bits, radicands, gap=True) == [math.isqrt(v) for v in radicands]


def test_bits_is_checked() -> None:
    with pytest.raises(ValueError, match=r"^bits must be a positive integer, not 0$"):
        SquareRoot(0)
