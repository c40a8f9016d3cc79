"""External-memory access of the golden machine against byte-by-byte Python loops.

Mirrors `sim/golden/external.py`: gathers along row and element patterns (negative strides
included), little-endian operands of one and two bytes, bit 7 flipped on the way in and out,
rows written in order where they overlap, and the range check that refuses an access, naming
every byte it spans, before anything changes.
"""

import re

import numpy as np
import pytest

from systolic.errors import SimulationError
from systolic.isa.patterns import ElementPattern, RowPattern
from systolic.sim.golden.external import check_external, gather_operands, read_rows, write_rows

ROWS = [RowPattern(40, 1, 0, 7), RowPattern(100, 3, -5, 20), RowPattern(90, 2, 3, -16),
        RowPattern(10, 1, 0, 0)]
ELEMENTS = [ElementPattern(0, 4, 4, 1, 0, 0), ElementPattern(2, 5, 2, 2, 9, 30),
            ElementPattern(1, 3, 1, 3, -4, 11)]


def _memory(seed: int, size: int = 256) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)


def _expected_operands(memory: np.ndarray, rows: RowPattern, count: int,
                       elements: ElementPattern, operand_bytes: int, flip: bool) -> np.ndarray:
    offsets = elements.offsets(operand_bytes)
    out = np.zeros((count, elements.length), dtype=np.int64)
    for r in range(count):
        for e in range(elements.length):
            address = rows.address(r) + int(offsets[e])
            data = bytes(int(memory[address + b]) ^ (0x80 if flip else 0)
                         for b in range(operand_bytes))
            out[r, e] = int.from_bytes(data, "little", signed=True)
    return out


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("elements", ELEMENTS)
@pytest.mark.parametrize(("operand_bytes", "flip"), [(1, False), (1, True), (2, False)])
def test_gather_operands(rows: RowPattern, elements: ElementPattern, operand_bytes: int,
                         flip: bool) -> None:
    memory = _memory(operand_bytes + 2 * flip)
    before = memory.copy()
    got = gather_operands(memory, "LOAD", rows, 5, elements, operand_bytes, flip)
    assert got.dtype == np.dtype(f"<i{operand_bytes}")
    np.testing.assert_array_equal(
        got, _expected_operands(memory, rows, 5, elements, operand_bytes, flip))
    np.testing.assert_array_equal(memory, before)  # (flipped in a copy)


@pytest.mark.parametrize("rows", ROWS)
def test_read_rows(rows: RowPattern) -> None:
    memory = _memory(7)
    got = read_rows(memory, "LOAD", rows, 4, 9)
    expected = [memory[rows.address(r) : rows.address(r) + 9] for r in range(4)]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize(("operand_bytes", "flip"), [(1, False), (1, True), (2, False)])
def test_write_rows_in_order_later_rows_win(rows: RowPattern, operand_bytes: int,
                                            flip: bool) -> None:
    """Rows 7 bytes apart overlap with 2-byte operands, rows 3 apart always; stride 0 rewrites
    one row."""
    values = np.random.default_rng(3).integers(-40_000, 40_000, (5, 4))
    memory = _memory(8)
    expected = memory.copy()
    for r in range(5):
        for e, value in enumerate(values[r].tolist()):
            data = (value % 2 ** (8 * operand_bytes)).to_bytes(operand_bytes, "little")
            for b, byte in enumerate(data):
                expected[rows.address(r) + e * operand_bytes + b] = byte ^ (0x80 if flip else 0)
    write_rows(memory, "STORE", rows, values, operand_bytes, flip)
    np.testing.assert_array_equal(memory, expected)


def test_write_rows_of_a_strided_view_and_of_no_rows() -> None:
    memory = np.zeros(16, dtype=np.uint8)
    values = np.arange(12).reshape(3, 4)[:, ::2]  # (not contiguous)
    write_rows(memory, "COPY", RowPattern(0, 1, 0, 2), values, 1, False)
    np.testing.assert_array_equal(memory[:6], [0, 2, 4, 6, 8, 10])
    write_rows(memory, "COPY", RowPattern(1000, 1, 0, 2), values[:0], 1, False)  # no bytes


def test_accesses_beyond_memory_name_every_byte_and_change_nothing() -> None:
    memory = _memory(9, 64)
    before = memory.copy()
    message = ("LOAD accesses external bytes 60..69, beyond the 64 bytes of simulated memory; "
               "give Machine a larger memory_size")
    elements = ElementPattern(0, 5, 5, 1, 0, 0)
    with pytest.raises(SimulationError, match=f"^{re.escape(message)}$"):
        gather_operands(memory, "LOAD", RowPattern(60, 1, 0, 0), 1, elements, 2, False)
    with pytest.raises(SimulationError, match=r"^LOAD accesses external bytes -3\.\.5, beyond"):
        read_rows(memory, "LOAD", RowPattern(3, 1, 0, -3), 3, 3)
    with pytest.raises(SimulationError, match=r"^STORE accesses external bytes 50\.\.65, beyond"):
        write_rows(memory, "STORE", RowPattern(50, 1, 0, 8), np.ones((2, 4)), 2, False)
    np.testing.assert_array_equal(memory, before)
    with pytest.raises(SimulationError, match=r"^the image accesses external bytes 0\.\.64, "):
        check_external(memory, "the image", 0, 64)
    check_external(memory, "the image", 0, 63)
