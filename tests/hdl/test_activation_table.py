# amaranth: UnusedElaboratable=no

"""ActivationTable: zero after reset, row loads (last row cut at entry 255), lookups one cycle
later, against a Python list of the 256 entries."""

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Signal
from amaranth.sim import Simulator

from systolic.hdl.activation_table import ActivationTable, table_rows

from .streams import unpack_array


def run(lanes: int, steps) -> list[tuple[int, list[int]]]:
    """Apply `steps` (("load", row, values) or ("look", values)), one per cycle; return the
    (cycle, row) of every valid `o_row`."""
    dut = ActivationTable(lanes=lanes)
    seen: list[tuple[int, list[int]]] = []

    async def testbench(ctx):
        for cycle, step in enumerate([*steps, ("idle",), ("idle",)]):
            ctx.set(dut.i_load.valid, step[0] == "load")
            ctx.set(dut.i_row.valid, step[0] == "look")
            if step[0] == "load":
                ctx.set(dut.i_load.payload.row, step[1])
                ctx.set(dut.i_load.payload.data, step[2])
            elif step[0] == "look":
                ctx.set(dut.i_row.payload, step[1])
            if ctx.get(dut.o_row.valid):
                bits = ctx.get(dut.o_row.payload.as_value())
                seen.append((cycle, unpack_array(bits, 8, lanes)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return seen


@pytest.mark.parametrize("lanes", [3, 8, 300])
def test_reset_load_and_lookup(lanes: int) -> None:
    rng = np.random.default_rng(lanes)
    rows = table_rows(lanes)
    entries = rng.integers(-128, 128, rows * lanes)
    looks = [[int(v) for v in rng.integers(-128, 128, lanes)] for _ in range(6)]
    looks.append([-128, 127, 0][:lanes] + [1] * (lanes - 3))
    steps = [("look", looks[0])]
    steps += [("load", int(r), [int(v) for v in entries[r * lanes:(r + 1) * lanes]])
              for r in rng.permutation(rows)]
    steps += [("look", values) for values in looks]
    seen = run(lanes, steps)
    table = [int(v) for v in entries[:256]]
    assert seen[0] == (1, [0] * lanes)  # zero after reset
    expected = [(rows + 2 + k, [table[y + 128] for y in values]) for k, values in enumerate(looks)]
    assert seen[1:] == expected


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^lanes must be a positive integer, not 0$"):
        ActivationTable(lanes=0)


def test_verilog() -> None:
    dut = ActivationTable(lanes=4)
    ports = [value for _, _, value in dut.signature.flatten(dut) if isinstance(value, Signal)]
    text = verilog.convert(dut, name="activation_table", ports=ports)
    assert "module activation_table" in text
