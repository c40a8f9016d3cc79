"""TABLE: its word, configuration limits and footprint (docs/isa.md, "Activation unit")."""

import dataclasses
import re

import pytest

from systolic.config import ArrayConfig
from systolic.isa.assembler import parse_instruction
from systolic.isa.disassembler import format_instruction
from systolic.isa.fields import InstructionError
from systolic.isa.instructions import Table, decode
from systolic.isa.memories import Access, Memory, depth
from systolic.isa.table import exp_table_rows, table_rows

WS = ArrayConfig(rows=8, cols=8)


def test_the_word_holds_the_opcode_and_row_at_bits_63_32() -> None:
    word = Table(row=0x12345678).encode()
    value = int.from_bytes(word, "little")
    assert value == 0x0A | 0x12345678 << 32
    assert decode(word) == Table(row=0x12345678)


def test_wide_sits_at_bit_8() -> None:
    word = Table(row=0x12345678, wide=True).encode()
    assert int.from_bytes(word, "little") == 0x0A | 1 << 8 | 0x12345678 << 32
    assert decode(word) == Table(row=0x12345678, wide=True)


def test_text_round_trip() -> None:
    assert format_instruction(Table(row=7)) == "TABLE row=7 wide=0"
    assert parse_instruction("TABLE row=7") == Table(row=7)
    assert format_instruction(Table(row=7, wide=True)) == "TABLE row=7 wide=1"
    assert parse_instruction("TABLE row=7 wide=1") == Table(row=7, wide=True)


@pytest.mark.parametrize(("rows", "cols", "expected"), [(8, 8, 32), (3, 5, 52), (16, 16, 16),
                                                       (1, 128, 2), (4, 100, 3)])
def test_table_rows_is_ceil_256_over_dim(rows: int, cols: int, expected: int) -> None:
    assert table_rows(ArrayConfig(rows=rows, cols=cols)) == expected


def test_footprint_reads_the_table_rows() -> None:
    assert Table(row=10).footprint(WS) == (Access(Memory.SPAD_IN, 10, 41, False),)


def test_the_last_rows_of_spad_in_are_accepted() -> None:
    Table(row=depth(WS, Memory.SPAD_IN) - 32).check(WS)


@pytest.mark.parametrize(
    ("instr", "config", "message"),
    [
        (
            Table(row=0),
            dataclasses.replace(WS, input_width=16),
            "TABLE needs 8-bit activations (input_width 8), not 16",
        ),
        (
            Table(row=16384 - 31),
            WS,
            ("TABLE row + ceil(256 / dim) must not exceed 16384 (the spad_in depth of this 8x8 "
            "array), not 16385"),
        ),
    ],
)
def test_configuration_limits(instr: Table, config: ArrayConfig, message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        instr.check(config)


@pytest.mark.parametrize(("rows", "cols", "expected"), [(8, 8, 64), (3, 5, 103), (16, 16, 32),
                                                       (1, 128, 4), (4, 100, 6), (1, 1, 512)])
def test_exp_table_rows_is_ceil_512_over_dim(rows: int, cols: int, expected: int) -> None:
    config = ArrayConfig(rows=rows, cols=cols)
    assert exp_table_rows(config) == Table(row=0, wide=True).rows(config) == expected


def test_wide_footprint_and_limits() -> None:
    assert Table(row=10, wide=True).footprint(WS) == (Access(Memory.SPAD_IN, 10, 73, False),)
    spad = depth(WS, Memory.SPAD_IN)
    Table(row=spad - 64, wide=True).check(WS)
    message = (f"TABLE row + ceil(512 / dim) must not exceed {spad} (the spad_in depth of "
               f"this 8x8 array), not {spad + 1}")
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        Table(row=spad - 63, wide=True).check(WS)
    with pytest.raises(InstructionError, match=r"^TABLE needs 8-bit activations"):
        Table(row=0, wide=True).check(dataclasses.replace(WS, input_width=16))
