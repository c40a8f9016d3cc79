"""TABLE: load the STORE unit's 256-entry activation table from spad_in rows.

docs/isa.md, "Activation unit: TABLE and the lut flags": `T[e] = spad_in[row + e div dim][e mod
dim]` for `e < 256`, from the `ceil(256 / dim)` rows `row ..`; a STORE or COPY with `lut` then
maps every int8 value `y` it writes to `T[y + 128]`. The table is ST unit state, named by no
footprint: it follows the ST queue's order.
"""

import dataclasses
from typing import ClassVar

from systolic.config import ArrayConfig
from systolic.isa.fields import Field, layout, spec
from systolic.isa.instruction_base import U32, Instruction, Unit
from systolic.isa.memories import Access, Memory, depth

__all__ = ["TABLE_ENTRIES", "Table", "need_8bit_activations", "table_rows"]

TABLE_ENTRIES = 256
"""Entries of the activation table: one per int8 value, index `y + 128`."""


def table_rows(config: ArrayConfig) -> int:
    """The spad_in rows a TABLE reads: `ceil(256 / dim)`."""
    return -(-TABLE_ENTRIES // config.dim)


def need_8bit_activations(instr: Instruction, what: str, config: ArrayConfig) -> None:
    """Raise InstructionError `<MNEMONIC> <what> needs 8-bit activations (input_width 8), not
    <w>` unless the configuration's input_width is 8."""
    if config.input_width != 8:
        instr._fail(
            f"{what}needs 8-bit activations (input_width 8), not {config.input_width}"
        )


@dataclasses.dataclass(frozen=True)
class Table(Instruction):
    """TABLE: replace the activation table with spad_in rows `row .. row + ceil(256/dim) - 1`."""

    OPCODE: ClassVar[int] = 0x0A
    MNEMONIC: ClassVar[str] = "TABLE"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(spec("row", U32))

    row: int

    def check(self, config: ArrayConfig) -> None:
        need_8bit_activations(self, "", config)
        self._need_rows(
            "row + ceil(256 / dim)",
            self.row + table_rows(config),
            depth(config, Memory.SPAD_IN),
            "spad_in",
            config,
        )

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (Access(Memory.SPAD_IN, self.row, self.row + table_rows(config) - 1, False),)
