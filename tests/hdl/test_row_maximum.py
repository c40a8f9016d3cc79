"""emit_row_maximum: random rows of random chunks (some lanes invalid, gaps between chunks) give
the maximum of each row's valid lanes, MAXIMUM_LAG + 1 cycles after each chunk's data."""

import random

import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.lib import data
from amaranth.sim import Simulator

from systolic.hdl.row_maximum import MAXIMUM_LAG, emit_row_maximum


def _cycles(rng: random.Random, lanes: int) -> list[tuple[bool, list[int], int] | None]:
    """Per cycle, a chunk (first of its row, data, valid lane count) or None (idle): a few
    rows, chunks back to back or with gaps."""
    cycles: list[tuple[bool, list[int], int] | None] = []
    for _ in range(8):
        for c in range(rng.randint(1, 4)):
            cycles += [None] * rng.choice([0, 0, 1, 3])
            cycles.append((c == 0, [rng.randint(-128, 127) for _ in range(lanes)],
                           rng.randint(1, lanes)))
    return cycles + [None] * (MAXIMUM_LAG + 1)


@pytest.mark.parametrize("lanes", [1, 2, 5, 8])
def test_row_maximum_after_its_lag(lanes: int) -> None:
    rng = random.Random(lanes)
    update, first = Signal(), Signal()
    x = Signal(data.ArrayLayout(signed(8), lanes))
    valid = [Signal(name=f"v{j}") for j in range(lanes)]
    m = Module()
    mx = emit_row_maximum(m, update, first, x, valid)
    cycles = _cycles(rng, lanes)
    after: list[int] = []  # row_max after each cycle's clock edge

    async def testbench(ctx):
        for chunk in cycles:
            is_first, values, count = chunk or (False, [0] * lanes, 0)
            ctx.set(update, chunk is not None)
            ctx.set(first, int(is_first))
            for j in range(lanes):  # idle cycles carry random data: ignored
                ctx.set(x[j], values[j] if chunk else rng.randint(-128, 127))
                ctx.set(valid[j], int(j < count))
            await ctx.tick()
            after.append(ctx.get(mx))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    best, checked = -128, 0
    for t, chunk in enumerate(cycles):
        if chunk is None:
            continue
        is_first, values, count = chunk
        best = max([-128 if is_first else best, *values[:count]])
        assert after[t + MAXIMUM_LAG] == best, (t, chunk)
        checked += 1
    assert checked >= 8
