"""Interfaces of the EXECUTE unit: instruction stream, completion strobes, scratchpad read ports.

Until a shared `hdl/ports.py` exists, the EXECUTE unit defines the signatures it needs here.
Field values of an instruction word are sliced from the same table as `sim/isa/fields.py`
(`instruction_field`), so the HDL and the Python encoder cannot disagree.
"""

from amaranth import Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..sim.isa.fields import INSTRUCTION_BITS, OPCODE_BITS

__all__ = [
    "TAG_WIDTH",
    "done_layout",
    "instruction_field",
    "instruction_layout",
    "opcode",
    "read_port_signature",
]

TAG_WIDTH = 4
"""Bits of an in-flight table entry index (16 entries)."""


def instruction_layout(tag_width: int = TAG_WIDTH) -> data.StructLayout:
    """Return the payload of a unit's instruction stream: the 512-bit `word` and its `tag`."""
    return data.StructLayout({"word": unsigned(INSTRUCTION_BITS), "tag": unsigned(tag_width)})


def done_layout(tag_width: int = TAG_WIDTH) -> data.StructLayout:
    """Return a completion strobe {`valid`, `tag`}: valid for one cycle per instruction.

    (A strobe, not an always-ready stream: a constant `ready` cannot be a port of a converted
    design.)
    """
    return data.StructLayout({"valid": 1, "tag": unsigned(tag_width)})


def read_port_signature(depth: int, row_shape: data.Layout) -> wiring.Signature:
    """Return a synchronous memory read port as its user sees it.

    `addr` and `en` are driven by the user; `data` is the row at `addr` of the cycle before in
    which `en` was high (one cycle latency, `amaranth.lib.memory` read port semantics, not
    transparent); while `en` is low `data` holds.
    """
    return wiring.Signature({
        "addr": Out(range(depth)),
        "en": Out(1),
        "data": In(row_shape),
    })


def opcode(word: Value) -> Value:
    """Return the opcode bits of an instruction word."""
    return word[:OPCODE_BITS]


def instruction_field(word: Value, cls: type, name: str) -> Value:
    """Return field `name` of instruction class `cls` (from its `FIELDS` table) in `word`."""
    for field in cls.FIELDS:  # type: ignore[attr-defined]
        if field.name == name:
            bits = word[field.offset:field.offset + field.width]
            return bits.as_signed() if field.signed else bits
    raise KeyError(f"{cls.__name__} has no field {name!r}")
