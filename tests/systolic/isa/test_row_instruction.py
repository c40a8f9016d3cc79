"""SOFTMAX and LAYERNORM as row instructions (systolic.isa.row_instruction): the shared part of
their words, their text form, the rules, configuration limits and footprint they share, each
test run for both."""

import dataclasses
import re

import pytest

from systolic.config import ArrayConfig
from systolic.isa.assembler import parse_instruction
from systolic.isa.disassembler import format_instruction
from systolic.isa.fields import InstructionError
from systolic.isa.instructions import LayerNorm, Softmax, decode
from systolic.isa.memories import Access, Memory, depth
from systolic.isa.row_instruction import RowInstruction, row_chunks

WS = ArrayConfig(rows=8, cols=8)
DIM5 = ArrayConfig(rows=3, cols=5)
SPAD = depth(WS, Memory.SPAD_IN)

KINDS: dict[str, type[RowInstruction]] = {"SOFTMAX": Softmax, "LAYERNORM": LayerNorm}
OWN_FIELDS = {"SOFTMAX": {}, "LAYERNORM": {"in_zero_point": 5, "eps": 77}}
"""Each instruction's own fields, besides the shared ones."""
_WORD_FIELDS = {"flip_sign": True, "length": 0x1234, "shift": -3, "zero_point": -2, "lo": -100,
                "hi": 99, "in_row": 0x01020304, "m": 0x05060708, "multiplier": -7,
                "ext": 0x0A0B0C0D, "n0": 3, "row_stride0": -5, "row_stride1": 0x11223344}
_WORD_OWN = {"SOFTMAX": {}, "LAYERNORM": {"in_zero_point": -9, "eps": 0xF1F2F3F4}}
OFFSETS = {  # name: (offset, width, raw value) in each instruction's word of `_WORD_FIELDS`
    "SOFTMAX": {
        "opcode": (0, 8, 0x0B), "flip_sign": (8, 1, 1), "length": (16, 16, 0x1234),
        "shift": (32, 8, 0xFD), "zero_point": (40, 8, 0xFE), "lo": (48, 8, 0x9C),
        "hi": (56, 8, 99), "in_row": (64, 32, 0x01020304), "m": (96, 32, 0x05060708),
        "multiplier": (128, 32, 2**32 - 7), "ext": (160, 32, 0x0A0B0C0D), "n0": (192, 32, 3),
        "row_stride0": (224, 32, 2**32 - 5), "row_stride1": (256, 32, 0x11223344),
    },
    "LAYERNORM": {
        "opcode": (0, 8, 0x0C), "flip_sign": (8, 1, 1), "length": (16, 16, 0x1234),
        "shift": (32, 8, 0xFD), "zero_point": (40, 8, 0xFE), "lo": (48, 8, 0x9C),
        "hi": (56, 8, 99), "in_zero_point": (64, 8, 0xF7), "in_row": (96, 32, 0x01020304),
        "m": (128, 32, 0x05060708), "multiplier": (160, 32, 2**32 - 7),
        "eps": (192, 32, 0xF1F2F3F4), "ext": (224, 32, 0x0A0B0C0D), "n0": (256, 32, 3),
        "row_stride0": (288, 32, 2**32 - 5), "row_stride1": (320, 32, 0x11223344),
    },
}

mnemonics = pytest.mark.parametrize("mnemonic", KINDS)


def row_instruction(mnemonic: str, **changes: object) -> RowInstruction:
    """Return a valid `mnemonic` of 3 rows of 13 elements from spad_in row 4, written at 100
    (16 bytes apart), with `changes`."""
    fields: dict[str, object] = {"in_row": 4, "m": 3, "length": 13, "multiplier": 1 << 30,
                                 "shift": 6, "zero_point": -128, "lo": -128, "hi": 127,
                                 "ext": 100, "row_stride1": 16, **OWN_FIELDS[mnemonic]}
    fields.update(changes)
    return KINDS[mnemonic](**fields)  # type: ignore[arg-type]


@mnemonics
def test_fields_sit_where_the_declaration_order_puts_them(mnemonic: str) -> None:
    instr = row_instruction(mnemonic, **_WORD_FIELDS, **_WORD_OWN[mnemonic])
    value = int.from_bytes(instr.encode(), "little")
    rebuilt = 0
    for name, (offset, width, raw) in OFFSETS[mnemonic].items():
        assert (value >> offset) & ((1 << width) - 1) == raw, name
        rebuilt |= raw << offset
    assert rebuilt == value
    assert decode(instr.encode()) == instr


@mnemonics
def test_text_round_trip(mnemonic: str) -> None:
    instr = row_instruction(mnemonic, flip_sign=True)
    text = format_instruction(instr)
    assert text.startswith(f"{mnemonic} in_row=4 m=3 length=13 multiplier=1073741824 shift=6 "
                           "zero_point=-128 lo=-128 hi=127 ext=100 ")  # fmt: skip
    assert parse_instruction(text) == instr


@mnemonics
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"length": 0}, "length must be from 1 to 65535, not 0"),
        ({"m": 0}, "m must be from 1 to 4294967295, not 0"),
        ({"shift": 32}, "shift must be from -31 to 31, not 32"),
        ({"shift": -32}, "shift must be from -31 to 31, not -32"),
        ({"lo": 5, "hi": 4}, "lo (5) must not exceed hi (4)"),
        ({"multiplier": 2**31}, ("multiplier must be from -2147483648 to 2147483647, not "
                                "2147483648")),
    ],
)
def test_rules(mnemonic: str, changes: dict[str, object], message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(f'{mnemonic} {message}')}$"):
        row_instruction(mnemonic, **changes)


@pytest.mark.parametrize(("length", "dim", "chunks"), [(1, 8, 1), (8, 8, 1), (9, 8, 2),
                                                       (13, 5, 3), (65535, 16, 4096)])
def test_row_chunks_are_ceil_length_over_dim(length: int, dim: int, chunks: int) -> None:
    assert row_chunks(length, ArrayConfig(rows=1, cols=dim)) == chunks


@mnemonics
def test_footprint_reads_m_times_c_rows_and_writes_the_rows(mnemonic: str) -> None:
    instr = row_instruction(mnemonic)
    # length 13 on dim 8: C = 2, rows 4 .. 9; writes rows at 100, 116, 132 of 13 bytes
    assert instr.footprint(WS) == (Access(Memory.SPAD_IN, 4, 9, False),
                                   Access(Memory.EXTERNAL, 100, 144, True))
    # dim 5: C = 3, rows 4 .. 12
    assert instr.footprint(DIM5)[0] == Access(Memory.SPAD_IN, 4, 12, False)
    wide = dataclasses.replace(WS, weight_width=16)  # (operand_bytes 2: 26-byte rows)
    assert instr.footprint(wide)[1] == Access(Memory.EXTERNAL, 100, 157, True)


@mnemonics
def test_the_last_rows_of_spad_in_are_accepted(mnemonic: str) -> None:
    row_instruction(mnemonic, in_row=SPAD - 6).check(WS)


@mnemonics
@pytest.mark.parametrize(
    ("changes", "config", "message"),
    [
        ({}, dataclasses.replace(WS, input_width=16),
         "needs 8-bit activations (input_width 8), not 16"),
        ({"in_row": SPAD - 5}, WS,
         (f"in_row + m * ceil(length / dim) must not exceed {SPAD} (the spad_in depth of this "
          f"8x8 array), not {SPAD + 1}")),
        ({"flip_sign": True}, dataclasses.replace(WS, weight_width=16),
         ("flip_sign needs 8-bit operands stored in one byte (input_width 8, operand_bytes 1); "
          "this array has input_width 8 and operand_bytes 2")),
        ({"ext": 2**32 - 20}, WS,
         (f"accesses external bytes {2**32 - 20}..{2**32 - 20 + 44}, outside 0..{2**32 - 1}; "
          "check ext and the strides")),
    ],
)
def test_configuration_limits(mnemonic: str, changes: dict[str, object], config: ArrayConfig,
                              message: str) -> None:  # fmt: skip
    with pytest.raises(InstructionError, match=f"^{re.escape(f'{mnemonic} {message}')}$"):
        row_instruction(mnemonic, **changes).check(config)
