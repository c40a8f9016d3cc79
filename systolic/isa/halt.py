"""HALT: the end of a program; it passes dispatch and occupies no unit."""

import dataclasses
from typing import ClassVar

from systolic.isa.fields import Field
from systolic.isa.instruction_base import Instruction, Unit

__all__ = ["Halt"]


@dataclasses.dataclass(frozen=True)
class Halt(Instruction):
    """HALT: the end of the program."""

    OPCODE: ClassVar[int] = 0x09
    MNEMONIC: ClassVar[str] = "HALT"
    UNIT: ClassVar[Unit] = Unit.DISPATCH
    FIELDS: ClassVar[tuple[Field, ...]] = ()
