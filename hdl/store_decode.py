"""Decode STORE-unit instruction fields from a 512-bit word with the ISA's own field table.

The slices come from `systolic.sim.isa.instructions` (`FIELDS`, built by
`systolic.sim.isa.fields.layout`) at elaboration time, so the HDL and the Python encoder cannot
disagree about where a field lies.
"""

from amaranth.hdl import Value

from ..sim.isa.instructions import Add, Copy, Instruction, Pool, Store

__all__ = ["OPCODES", "field"]

OPCODES = {cls: cls.OPCODE for cls in (Store, Pool, Add, Copy)}
"""The opcodes the STORE unit executes."""


def field(word: Value, cls: type[Instruction], name: str) -> Value:
    """Return field `name` of instruction class `cls` as a slice of `word` (signed if it is)."""
    for spec in cls.FIELDS:
        if spec.name == name:
            value = word[spec.offset:spec.offset + spec.width]
            return value.as_signed() if spec.signed else value
    raise KeyError(f"{cls.MNEMONIC} has no field {name!r}")
