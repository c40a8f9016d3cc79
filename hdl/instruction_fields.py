"""Instruction words in hardware: layouts built from the Python field table, and unit streams.

The bit layout of every instruction is `FIELDS` of its class in `systolic.isa.instructions`
(offsets assigned by `systolic.isa.fields.layout`). `instruction_layout(cls)` turns that
table into a `data.FlexibleLayout` over the 512-bit word at elaboration time, so the HDL decoder
and the Python encoder read the same table and cannot disagree:

    view = data.View(instruction_layout(Load), word)   # view.count, view.row_stride0, ...

Signed fields get signed shapes, flags and enums unsigned shapes of their field width.

The dispatcher hands each unit its instructions as a stream of `INSTRUCTION_STREAM_LAYOUT`
({payload: the 512-bit word, tag: the in-flight table entry}); a unit reports each completed
instruction with a strobe of `COMPLETION_LAYOUT` ({tag}).
"""

from amaranth.hdl import Shape, signed, unsigned
from amaranth.lib import data, stream

from systolic.isa.fields import INSTRUCTION_BITS, OPCODE_BITS
from systolic.isa.instructions import Instruction

__all__ = [
    "COMPLETION_LAYOUT",
    "INSTRUCTION_STREAM_LAYOUT",
    "TAG_WIDTH",
    "completion_signature",
    "field_shape",
    "instruction_layout",
    "instruction_signature",
]

TAG_WIDTH = 4
"""Bits of an in-flight table entry index (16 entries)."""

INSTRUCTION_STREAM_LAYOUT = data.StructLayout({
    "payload": INSTRUCTION_BITS,
    "tag": TAG_WIDTH,
})
"""One instruction handed to a unit: its word and its in-flight table entry."""

COMPLETION_LAYOUT = data.StructLayout({"tag": TAG_WIDTH})
"""One completed instruction, named by its in-flight table entry."""


def field_shape(width: int, is_signed: bool) -> Shape:
    """Return the Amaranth shape of a field of `width` bits."""
    return signed(width) if is_signed else unsigned(width)


def instruction_layout(cls: type[Instruction]) -> data.FlexibleLayout:
    """Return the layout of `cls`'s 512-bit word: `opcode` and every field at its offset."""
    fields = {"opcode": data.Field(unsigned(OPCODE_BITS), 0)}
    for field in cls.FIELDS:
        fields[field.name] = data.Field(field_shape(field.width, field.signed), field.offset)
    return data.FlexibleLayout(INSTRUCTION_BITS, fields)


def instruction_signature() -> stream.Signature:
    """Return the signature of a unit's instruction stream (payload and tag)."""
    return stream.Signature(INSTRUCTION_STREAM_LAYOUT)


def completion_signature() -> stream.Signature:
    """Return the signature of a unit's completion strobe: {tag}, always ready."""
    return stream.Signature(COMPLETION_LAYOUT, always_ready=True)
