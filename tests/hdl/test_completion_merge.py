"""`CompletionMerge` against a Python model of its rule: strobe order, first before second, one
per cycle, never a loss."""

import random

import pytest
from amaranth.sim import Simulator

from systolic.hdl.completion_merge import CompletionMerge


def expected_deliveries(strobes: list[tuple[int | None, int | None]]) -> list[tuple[int, int]]:
    """Return (cycle, tag) deliveries: d_k = max(t_k, d_{k-1} + 1), first before second."""
    out, last = [], -1
    for cycle, pair in enumerate(strobes):
        for tag in pair:
            if tag is not None:
                last = max(cycle, last + 1)
                out.append((last, tag))
    return out


@pytest.mark.parametrize("density", [0.2, 0.5, 0.9])
def test_random_strobes(density: float) -> None:
    rng = random.Random(str(density))
    strobes = []
    outstanding = 0  # keep the backlog within the depth, as distinct in-flight tags do
    for _ in range(300):
        a = rng.randrange(16) if rng.random() < density else None
        b = rng.randrange(16) if rng.random() < density else None
        if outstanding + (a is not None) + (b is not None) > 15:
            a = b = None
        strobes.append((a, b))
        outstanding = max(0, outstanding + (a is not None) + (b is not None) - 1)
    dut = CompletionMerge(depth=16, tag_width=4)
    seen = []

    async def testbench(ctx):
        for cycle, (a, b) in enumerate([*strobes, *[(None, None)] * 40]):
            ctx.set(dut.i_first.valid, a is not None)
            ctx.set(dut.i_first.tag, a or 0)
            ctx.set(dut.i_second.valid, b is not None)
            ctx.set(dut.i_second.tag, b or 0)
            _, _, valid, tag = await ctx.tick().sample(dut.o_done.valid, dut.o_done.tag)
            if valid:
                seen.append((cycle, tag))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert seen == expected_deliveries(strobes)
    assert any(a is not None and b is not None for a, b in strobes)


def test_bad_depth() -> None:
    with pytest.raises(ValueError, match=r"^depth must be a power of two of at least 2, not 3$"):
        CompletionMerge(depth=3)
