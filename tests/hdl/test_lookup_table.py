# amaranth: UnusedElaboratable=no

"""LookupTable as the activation table (int8) and the exp table (u16): zero after reset, row
loads in any order (the last row cut at the table's last byte), lookups one cycle later,
against the bytes as the golden machine reads them (`sim/golden/softmax.exp_table_from_rows`
for the exp table)."""

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Signal, signed, unsigned
from amaranth.sim import Simulator

from systolic.hdl.lookup_table import LookupTable, load_rows
from systolic.sim.golden.softmax import exp_table_from_rows

from .streams import unpack_array

ACTIVATION, EXP = signed(8), unsigned(16)


def run(dut: LookupTable, steps) -> list[tuple[int, list[int]]]:
    """Apply `steps`, one per cycle, each (load, indices): load None or (row, bytes), indices
    None or one entry number per lane; return the (cycle, entries) of every valid `o_entry`."""
    seen: list[tuple[int, list[int]]] = []
    layout = dut.o_entry.payload.shape()
    width, lanes = layout.elem_shape.width, layout.length

    async def testbench(ctx):
        for cycle, (load, indices) in enumerate([*steps, (None, None), (None, None)]):
            ctx.set(dut.i_load.valid, load is not None)
            ctx.set(dut.i_index.valid, indices is not None)
            if load is not None:
                ctx.set(dut.i_load.payload.row, load[0])
                ctx.set(dut.i_load.payload.data, load[1])
            if indices is not None:
                ctx.set(dut.i_index.payload, indices)
            if ctx.get(dut.o_entry.valid):
                values = unpack_array(ctx.get(dut.o_entry.payload.as_value()), width, lanes)
                if not layout.elem_shape.signed:
                    values = [v % (1 << width) for v in values]
                seen.append((cycle, values))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return seen


def load(row: int, values) -> tuple:
    """Return a step that loads `values` into row `row`."""
    return (row, [int(v) for v in values]), None


def look(indices) -> tuple:
    """Return a step that looks up `indices`."""
    return None, indices


def expected_entries(entry, data: np.ndarray) -> list[int]:
    """Return the 256 entries the loaded bytes `data` (int8, in row order) define."""
    table = exp_table_from_rows(data) if entry is EXP else data[:256]
    return [int(v) for v in table]


# activation: 3 and 300 cut the last row at entry 255; exp: 3, 5 and 1 straddle entries
# across rows, 3 cuts the last row at byte 511
@pytest.mark.parametrize(("lanes", "entry"), [
    (3, ACTIVATION), (8, ACTIVATION), (300, ACTIVATION),
    (1, EXP), (3, EXP), (5, EXP), (8, EXP),
], ids=lambda v: str(v))  # fmt: skip
def test_reset_load_and_lookup(lanes: int, entry) -> None:
    dut = LookupTable(lanes=lanes, entry=entry)
    rng = np.random.default_rng(lanes)
    rows = load_rows(lanes, dut.entry_bytes)
    data = rng.integers(-128, 128, rows * lanes)
    looks = [[int(v) for v in rng.integers(0, 256, lanes)] for _ in range(5)]
    looks.append(([0, 255, 128] * lanes)[:lanes])
    steps = [look(looks[0])]
    steps += [load(int(r), data[r * lanes:(r + 1) * lanes]) for r in rng.permutation(rows)]
    steps += [look(indices) for indices in looks]
    seen = run(dut, steps)
    table = expected_entries(entry, data)
    assert seen[0] == (1, [0] * lanes)  # zero after reset
    assert seen[1:] == [(rows + 2 + k, [table[i] for i in indices])
                        for k, indices in enumerate(looks)]


def test_rows_never_loaded_read_zero() -> None:
    """Only row 1 is loaded: entries of rows 0 and 2 stay 0, a straddling entry is half
    loaded."""
    dut = LookupTable(lanes=3, entry=EXP)
    seen = run(dut, [load(1, [1, 2, 3]), look([1, 2, 0]), look([3, 4, 5])])
    # bytes 3, 4, 5 = 1, 2, 3: entry 1 = bytes 2, 3; entry 2 = bytes 4, 5
    assert seen == [(2, [0x100, 0x302, 0]), (3, [0, 0, 0])]


def test_a_lookup_in_the_cycle_of_a_load_sees_the_row_before_it() -> None:
    dut = LookupTable(lanes=2, entry=ACTIVATION)
    seen = run(dut, [((0, [5, 6]), [0, 1]), look([0, 1])])
    assert seen == [(1, [0, 0]), (2, [5, 6])]


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^lanes must be a positive integer, not 0$"):
        LookupTable(lanes=0, entry=ACTIVATION)
    with pytest.raises(ValueError, match=r"^entry must be 8 to 16 bits in whole bytes, not 12$"):
        LookupTable(lanes=1, entry=unsigned(12))
    with pytest.raises(ValueError, match=r"^entry must be 8 to 16 bits in whole bytes, not 24$"):
        LookupTable(lanes=1, entry=unsigned(24))


def test_verilog_has_a_memory_not_an_entry_register() -> None:
    dut = LookupTable(lanes=4, entry=EXP)
    ports = [value for _, _, value in dut.signature.flatten(dut) if isinstance(value, Signal)]
    text = verilog.convert(dut, name="lookup_table", ports=ports)
    assert "module lookup_table" in text
    assert "reg [31:0] ram [127:0];" in text
