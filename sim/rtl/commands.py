"""Commands for the accelerator's `i_instr` port, packed as integers for any harness.

A command is `systolic.hdl.accelerator.command_layout()`: the 512-bit instruction word
(`payload`, bits 0..511), its `unit` (0 LD, 1 EX, 2 ST, 3 HALT) and its hazard footprint
(`ranges`: three {valid, mem, first, last, write} ranges, `hdl/range_overlap.py`), computed
from `Instruction.footprint(config)` with the memory ids of `hdl/range_overlap.MEMORY_IDS`.
Bit i of the integer is bit i of the port (LSB first), so a C++ harness splits it into 32-bit
words little-endian: `COMMAND_BITS` bits, `COMMAND_WORDS32` words.
"""

from collections.abc import Sequence

from systolic.config import ArrayConfig
from systolic.hdl.accelerator import ADDR_WIDTH, HALT_UNIT, RANGES, command_layout
from systolic.hdl.range_overlap import MEMORY_IDS, range_layout
from systolic.isa.instructions import Instruction, Unit
from systolic.isa.program import Program

__all__ = [
    "COMMAND_BITS",
    "COMMAND_WORDS32",
    "UNIT_INDEX",
    "encode_command",
    "encode_program",
    "split_words32",
    "unit_index",
]

_LAYOUT = command_layout()
COMMAND_BITS: int = int(_LAYOUT.size)
"""Width of one command (payload + unit + footprint)."""
COMMAND_WORDS32: int = (COMMAND_BITS + 31) // 32
"""32-bit words that hold one command."""

UNIT_INDEX: dict[Unit, int] = {Unit.LD: 0, Unit.EX: 1, Unit.ST: 2, Unit.DISPATCH: HALT_UNIT}
"""The `unit` field of each instruction's unit (HALT, `Unit.DISPATCH`, is 3)."""

_UNIT_OFFSET: int = int(_LAYOUT["unit"].offset)
_RANGES_OFFSET: int = int(_LAYOUT["ranges"].offset)
_RANGE = range_layout(ADDR_WIDTH)
_RANGE_BITS: int = int(_RANGE.size)
_RANGE_FIELDS: dict[str, int] = {
    name: int(_RANGE[name].offset) for name in ("valid", "mem", "first", "last", "write")
}


def unit_index(instr: Instruction) -> int:
    """Return the `unit` field of `instr`'s command: 0 LD, 1 EX, 2 ST, 3 HALT."""
    return UNIT_INDEX[instr.UNIT]


def encode_command(instr: Instruction, config: ArrayConfig) -> int:
    """Return the command for `instr` on `config` as an integer of `COMMAND_BITS` bits."""
    value = int.from_bytes(instr.encode(), "little")
    value |= unit_index(instr) << _UNIT_OFFSET
    accesses = instr.footprint(config)
    if len(accesses) > RANGES:
        raise ValueError(f"{instr.MNEMONIC} has {len(accesses)} footprint ranges; at most {RANGES}")
    for index, access in enumerate(accesses):
        bits = (
            1 << _RANGE_FIELDS["valid"]
            | MEMORY_IDS.index(access.memory.value) << _RANGE_FIELDS["mem"]
            | access.first << _RANGE_FIELDS["first"]
            | access.last << _RANGE_FIELDS["last"]
            | int(access.write) << _RANGE_FIELDS["write"]
        )
        value |= bits << (_RANGES_OFFSET + index * _RANGE_BITS)
    return value


def encode_program(program: Program) -> list[int]:
    """Return the commands of every instruction of `program`, in order (HALT last)."""
    return [encode_command(instr, program.config) for instr in program.instructions]


def split_words32(command: int) -> Sequence[int]:
    """Return `command` as `COMMAND_WORDS32` unsigned 32-bit words, least significant first."""
    return [(command >> (32 * w)) & 0xFFFF_FFFF for w in range(COMMAND_WORDS32)]
