# amaranth: UnusedElaboratable=no

"""share_multipliers: each unit gets the exact product of its own operands while selected;
multiply: a local product without external products, the port's with them."""

import random
from types import SimpleNamespace

from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from systolic.hdl.shared_multipliers import (
    multiply,
    operands_layout,
    products_layout,
    share_multipliers,
)

FIRST = {"scale": (9, 32), "product": (9, 41)}
SECOND = {"requant": (27, 32), "lane": (17, 52)}
PAIRS = {"scale": "requant", "product": "lane"}  # (two pairs, as wide as the units' own)


def fake_unit(shapes, lanes):
    return SimpleNamespace(external_products=tuple(shapes),
                           o_operands=Signal(operands_layout(shapes, lanes)),
                           i_products=Signal(products_layout(shapes, lanes)))


def test_the_selected_unit_gets_its_exact_products():
    lanes = 2
    first, second = fake_unit(FIRST, lanes), fake_unit(SECOND, lanes)
    use_second = Signal()
    m = Module()
    share_multipliers(m, first, second, PAIRS, use_second, lanes)
    rng = random.Random(3)

    def draw(width):
        return rng.choice([-(2 ** (width - 1)), 2 ** (width - 1) - 1,
                           rng.randrange(-(2 ** (width - 1)), 2 ** (width - 1))])

    checked = []

    async def testbench(ctx):
        for trial in range(60):
            selected = trial % 2
            ctx.set(use_second, selected)
            unit, shapes = (second, SECOND) if selected else (first, FIRST)
            for lane in range(lanes):
                for name, (a, b) in shapes.items():
                    x, y = draw(a), draw(b)
                    ctx.set(unit.o_operands[lane][name].a, x)
                    ctx.set(unit.o_operands[lane][name].b, y)
                    checked.append((ctx.get(unit.i_products[lane][name]), x * y))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert len(checked) == 60 * lanes * 2
    assert all(got == want for got, want in checked)


def test_multiply_is_local_or_drives_the_operand_ports():
    a, b = Signal(signed(5)), Signal(signed(7))
    local_out, external_out = Signal(signed(12)), Signal(signed(12))
    external = fake_unit({"scale": (5, 7)}, 1)
    m = Module()
    m.d.comb += [
        local_out.eq(multiply(m, SimpleNamespace(external_products=()), "scale", 0, a, b)),
        external_out.eq(multiply(m, external, "scale", 0, a, b)),
        external.i_products[0]["scale"].eq(-1234),  # what the outside multiplier returns
    ]
    seen = []

    async def testbench(ctx):
        for x, y in ((-16, 63), (15, -64), (7, 9)):
            ctx.set(a, x)
            ctx.set(b, y)
            operands = external.o_operands[0]["scale"]
            seen.append((ctx.get(local_out), ctx.get(operands.a), ctx.get(operands.b),
                         ctx.get(external_out)))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert seen == [(-1008, -16, 63, -1234), (-960, 15, -64, -1234), (63, 7, 9, -1234)]
