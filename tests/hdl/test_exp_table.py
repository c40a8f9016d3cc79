# amaranth: UnusedElaboratable=no

"""ExpTable: zero after reset, row loads of bytes (last row cut at byte 511), u16 lookups one
cycle later, against `sim/golden/softmax.exp_table_from_rows`."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from systolic.hdl.exp_table import ExpTable, exp_table_rows
from systolic.sim.golden.softmax import exp_table_from_rows

from .streams import unpack_array


def run(lanes: int, steps) -> list[tuple[int, list[int]]]:
    """Apply `steps` (("load", row, values) or ("look", indices)), one per cycle; return the
    (cycle, entries) of every valid `o_entry`."""
    dut = ExpTable(lanes=lanes)
    seen: list[tuple[int, list[int]]] = []

    async def testbench(ctx):
        for cycle, step in enumerate([*steps, ("idle",), ("idle",)]):
            ctx.set(dut.i_load.valid, step[0] == "load")
            ctx.set(dut.i_index.valid, step[0] == "look")
            if step[0] == "load":
                ctx.set(dut.i_load.payload.row, step[1])
                ctx.set(dut.i_load.payload.data, step[2])
            elif step[0] == "look":
                ctx.set(dut.i_index.payload, step[1])
            if ctx.get(dut.o_entry.valid):
                bits = ctx.get(dut.o_entry.payload.as_value())
                seen.append((cycle, [v & 0xFFFF for v in unpack_array(bits, 16, lanes)]))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return seen


@pytest.mark.parametrize("lanes", [3, 8])  # 3: the last row is cut at byte 511
def test_reset_load_and_lookup(lanes: int) -> None:
    rng = np.random.default_rng(lanes)
    rows = exp_table_rows(lanes)
    data = rng.integers(-128, 128, rows * lanes)
    looks = [[int(v) for v in rng.integers(0, 256, lanes)] for _ in range(5)]
    looks.append([0, 255, 128][:lanes] + [1] * (lanes - 3))
    steps = [("look", looks[0])]
    steps += [("load", int(r), [int(v) for v in data[r * lanes:(r + 1) * lanes]])
              for r in rng.permutation(rows)]
    steps += [("look", indices) for indices in looks]
    seen = run(lanes, steps)
    table = exp_table_from_rows(data)
    assert seen[0] == (1, [0] * lanes)  # zero after reset
    assert seen[1:] == [(rows + 2 + k, [int(table[i]) for i in indices])
                        for k, indices in enumerate(looks)]
