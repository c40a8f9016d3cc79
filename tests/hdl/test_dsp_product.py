"""partial_products + sum_partials == the exact signed product; every piece fits 18 x 18."""

import random

import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from systolic.hdl.dsp_product import limbs, partial_products, sum_partials


@pytest.mark.parametrize(("a_width", "b_width"), [(33, 32), (20, 32), (41, 9), (18, 18), (2, 5)])
def test_pieces_sum_to_the_product(a_width, b_width):
    a, b = Signal(signed(a_width)), Signal(signed(b_width))
    pieces = partial_products(a, b)
    registers = [Signal(signed(len(p))) for p, _ in pieces]
    total = Signal(signed(a_width + b_width))
    m = Module()
    m.d.comb += [r.eq(p) for r, (p, _) in zip(registers, pieces, strict=True)]
    m.d.comb += total.eq(sum_partials(registers, [k for _, k in pieces], a_width + b_width))
    rng = random.Random(a_width * 100 + b_width)
    extremes = [-(2 ** (a_width - 1)), 2 ** (a_width - 1) - 1, 0, -1]
    cases = [(x, y) for x in extremes for y in (-(2 ** (b_width - 1)), 2 ** (b_width - 1) - 1)]
    cases += [(rng.randrange(-(2 ** (a_width - 1)), 2 ** (a_width - 1)),
               rng.randrange(-(2 ** (b_width - 1)), 2 ** (b_width - 1))) for _ in range(200)]
    got = []

    async def testbench(ctx):
        for x, y in cases:
            ctx.set(a, x)
            ctx.set(b, y)
            got.append(ctx.get(total))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert got == [x * y for x, y in cases]


def test_every_limb_fits_an_18_bit_signed_operand():
    for width in (2, 17, 18, 19, 33, 35, 36, 52):
        pieces = limbs(Signal(signed(width)))
        assert all(len(limb) <= 18 for limb, _ in pieces)
        assert [offset for _, offset in pieces] == list(range(0, 17 * len(pieces), 17))
        assert len(pieces) == max(1, -(-(width - 1) // 17))
