"""LAYERNORM: its word, rules, configuration limits, footprint and the per-row reciprocal square
root (docs/isa.md, "LAYERNORM")."""

import dataclasses
import math
import re

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.assembler import parse_instruction
from systolic.isa.disassembler import format_instruction
from systolic.isa.fields import InstructionError
from systolic.isa.instructions import INSTRUCTION_TYPES, LayerNorm, Unit, decode
from systolic.isa.layernorm import inverse_sqrt, norm_shift
from systolic.isa.memories import Access, Memory, depth

WS = ArrayConfig(rows=8, cols=8)
DIM5 = ArrayConfig(rows=3, cols=5)
SPAD = depth(WS, Memory.SPAD_IN)


def _layernorm(**changes: object) -> LayerNorm:
    fields: dict[str, object] = {"in_row": 4, "m": 3, "length": 13, "multiplier": 1 << 30,
                                 "shift": 6, "zero_point": -128, "lo": -128, "hi": 127,
                                 "in_zero_point": 5, "eps": 77, "ext": 100, "row_stride1": 16}
    fields.update(changes)
    return LayerNorm(**fields)  # type: ignore[arg-type]


def test_opcode_mnemonic_unit_and_place() -> None:
    assert (LayerNorm.OPCODE, LayerNorm.MNEMONIC, LayerNorm.UNIT) == (0x0C, "LAYERNORM", Unit.ST)
    assert INSTRUCTION_TYPES[-1] is LayerNorm


def test_fields_sit_where_the_declaration_order_puts_them() -> None:
    instr = _layernorm(flip_sign=True, length=0x1234, shift=-3, zero_point=-2, lo=-100, hi=99,
                       in_zero_point=-9, in_row=0x01020304, m=0x05060708, multiplier=-7,
                       eps=0xF1F2F3F4, ext=0x0A0B0C0D, n0=3, row_stride0=-5,
                       row_stride1=0x11223344)
    value = int.from_bytes(instr.encode(), "little")
    fields = {  # name: (offset, width, raw value)
        "opcode": (0, 8, 0x0C), "flip_sign": (8, 1, 1), "length": (16, 16, 0x1234),
        "shift": (32, 8, 0xFD), "zero_point": (40, 8, 0xFE), "lo": (48, 8, 0x9C),
        "hi": (56, 8, 99), "in_zero_point": (64, 8, 0xF7), "in_row": (96, 32, 0x01020304),
        "m": (128, 32, 0x05060708), "multiplier": (160, 32, 2**32 - 7),
        "eps": (192, 32, 0xF1F2F3F4), "ext": (224, 32, 0x0A0B0C0D), "n0": (256, 32, 3),
        "row_stride0": (288, 32, 2**32 - 5), "row_stride1": (320, 32, 0x11223344),
    }
    rebuilt = 0
    for name, (offset, width, raw) in fields.items():
        assert (value >> offset) & ((1 << width) - 1) == raw, name
        rebuilt |= raw << offset
    assert rebuilt == value
    assert decode(instr.encode()) == instr


def test_text_round_trip() -> None:
    instr = _layernorm(flip_sign=True)
    text = format_instruction(instr)
    assert text.startswith("LAYERNORM in_row=4 m=3 length=13 multiplier=1073741824 shift=6 ")
    assert parse_instruction(text) == instr


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"length": 0}, "LAYERNORM length must be from 1 to 65535, not 0"),
        ({"m": 0}, "LAYERNORM m must be from 1 to 4294967295, not 0"),
        ({"shift": -32}, "LAYERNORM shift must be from -31 to 31, not -32"),
        ({"lo": 5, "hi": 4}, "LAYERNORM lo (5) must not exceed hi (4)"),
        ({"in_zero_point": 128}, "LAYERNORM in_zero_point must be from -128 to 127, not 128"),
        ({"eps": -1}, "LAYERNORM eps must be from 0 to 4294967295, not -1"),
        ({"eps": 2**32}, "LAYERNORM eps must be from 0 to 4294967295, not 4294967296"),
    ],
)
def test_rules(changes: dict[str, object], message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        _layernorm(**changes)


def test_footprint_reads_m_times_c_rows_and_writes_the_rows() -> None:
    # length 13 on dim 8: C = 2, rows 4 .. 9; writes rows at 100, 116, 132 of 13 bytes
    assert _layernorm().footprint(WS) == (Access(Memory.SPAD_IN, 4, 9, False),
                                          Access(Memory.EXTERNAL, 100, 144, True))
    assert _layernorm().footprint(DIM5)[0] == Access(Memory.SPAD_IN, 4, 12, False)
    wide = dataclasses.replace(WS, weight_width=16)  # (operand_bytes 2: 26-byte rows)
    assert _layernorm().footprint(wide)[1] == Access(Memory.EXTERNAL, 100, 157, True)


def test_the_last_rows_of_spad_in_are_accepted() -> None:
    _layernorm(in_row=SPAD - 6).check(WS)


@pytest.mark.parametrize(
    ("instr", "config", "message"),
    [
        (_layernorm(), dataclasses.replace(WS, input_width=16),
         "LAYERNORM needs 8-bit activations (input_width 8), not 16"),
        (_layernorm(in_row=SPAD - 5), WS,
         (f"LAYERNORM in_row + m * ceil(length / dim) must not exceed {SPAD} (the spad_in "
          f"depth of this 8x8 array), not {SPAD + 1}")),
        (_layernorm(ext=2**32 - 20), WS,
         (f"LAYERNORM accesses external bytes {2**32 - 20}..{2**32 - 20 + 44}, outside "
          f"0..{2**32 - 1}; check ext and the strides")),
    ],
)
def test_configuration_limits(instr: LayerNorm, config: ArrayConfig, message: str) -> None:
    with pytest.raises(InstructionError, match=f"^{re.escape(message)}$"):
        instr.check(config)


@pytest.mark.parametrize(("v", "k"), [(0, 0), (1, 0), (2**30 - 1, 0), (2**30, 1),
                                      (2**31 - 1, 1), (2**31, 1), (2**32, 2), (2**49 - 1, 10)])
def test_norm_shift_is_the_smallest_k_below_2_to_30(v: int, k: int) -> None:
    assert norm_shift(v) == k
    assert v >> (2 * k) < 2**30
    assert k == 0 or v >> (2 * k - 2) >= 2**30


def test_inverse_sqrt_is_the_contract_and_within_2_to_minus_15() -> None:
    rng = np.random.default_rng(0)
    values = [1, 2, 3, 2**28, 2**30 - 1, 2**30, *(int(v) for v in rng.integers(1, 2**49, 500)),
              *(2**b + d for b in range(1, 49) for d in (-1, 0, 1))]
    for v in values:
        r, k = inverse_sqrt(v)
        vn = v >> (2 * k)
        assert r == math.isqrt(2**60 // vn) and r <= 2**30
        assert k == 0 or 2**28 <= vn < 2**30
        assert abs(r / 2 ** (30 + k) * math.sqrt(v) - 1) < 2**-15, v


def test_inverse_sqrt_of_zero_is_zero() -> None:
    assert inverse_sqrt(0) == (0, 0)
