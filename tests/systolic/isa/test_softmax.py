"""SOFTMAX: its opcode, unit, place and fields (docs/isa.md, "SOFTMAX and the exp table"); its
word, text, rules, configuration limits and footprint are those of every row instruction
(test_row_instruction)."""

from systolic.isa.instructions import INSTRUCTION_TYPES, Softmax, Unit


def test_opcode_mnemonic_unit_and_place() -> None:
    assert (Softmax.OPCODE, Softmax.MNEMONIC, Softmax.UNIT) == (0x0B, "SOFTMAX", Unit.ST)
    assert INSTRUCTION_TYPES[0x0B - 1] is Softmax


def test_has_only_the_row_instructions_fields() -> None:
    assert [f.name for f in Softmax.FIELDS] == [
        "flip_sign", "length", "shift", "zero_point", "lo", "hi", "in_row", "m", "multiplier",
        "ext", "n0", "row_stride0", "row_stride1"]
