"""TABLE: load one of the STORE unit's tables from spad_in rows.

docs/isa.md, "Activation unit: TABLE and the lut flags": `T[e] = spad_in[row + e div dim][e mod
dim]` for `e < 256`, from the `ceil(256 / dim)` rows `row ..`; a STORE or COPY with `lut` then
maps every int8 value `y` it writes to `T[y + 128]`. With `wide` (docs/isa.md, "SOFTMAX and the
exp table") TABLE loads the exp table `E` of 256 unsigned 16-bit entries instead, from the
512 bytes `s[k]` of the `ceil(512 / dim)` rows `row ..`: `E[e] = u8(s[2e]) + 256 u8(s[2e+1])`.
The tables are ST unit state, named by no footprint: they follow the ST queue's order.
"""

import dataclasses
from typing import ClassVar

from systolic.config import ArrayConfig
from systolic.config_units import OptionalUnit, absent_message
from systolic.isa.fields import Field, layout, spec
from systolic.isa.instruction_base import U32, Instruction, Unit
from systolic.isa.memories import Access, Memory, depth

__all__ = [
    "EXP_TABLE_BYTES",
    "TABLE_ENTRIES",
    "Table",
    "exp_table_rows",
    "need_8bit_activations",
    "table_rows",
]

TABLE_ENTRIES = 256
"""Entries of the activation table (one per int8 value, index `y + 128`) and of the exp
table (index: a distance 0 .. 255 below a row's maximum)."""
EXP_TABLE_BYTES = 2 * TABLE_ENTRIES
"""Bytes of the exp table as a wide TABLE reads them: 256 little-endian u16 entries."""


def table_rows(config: ArrayConfig) -> int:
    """The spad_in rows a TABLE reads: `ceil(256 / dim)`."""
    return -(-TABLE_ENTRIES // config.dim)


def exp_table_rows(config: ArrayConfig) -> int:
    """The spad_in rows a TABLE with `wide` reads: `ceil(512 / dim)`."""
    return -(-EXP_TABLE_BYTES // config.dim)


def need_8bit_activations(instr: Instruction, what: str, config: ArrayConfig) -> None:
    """Raise InstructionError `<MNEMONIC> <what> needs 8-bit activations (input_width 8), not
    <w>` unless the configuration's input_width is 8."""
    if config.input_width != 8:
        instr._fail(
            f"{what}needs 8-bit activations (input_width 8), not {config.input_width}"
        )


def need_unit(instr: Instruction, what: str, unit: OptionalUnit, config: ArrayConfig) -> None:
    """Raise InstructionError `<MNEMONIC> <what>cannot run: the accelerator is configured
    without its <unit> (--without <name>)` when the configuration omits `unit`."""
    if not config.has(unit):
        instr._fail(f"{what}cannot run: {absent_message(unit)}")


@dataclasses.dataclass(frozen=True)
class Table(Instruction):
    """TABLE: replace the activation table with spad_in rows `row .. row + ceil(256/dim) - 1`,
    or with `wide` the exp table with rows `row .. row + ceil(512/dim) - 1`."""

    OPCODE: ClassVar[int] = 0x0A
    MNEMONIC: ClassVar[str] = "TABLE"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(spec("wide", 1, kind=bool), spec("row", U32))

    row: int
    wide: bool = False

    def rows(self, config: ArrayConfig) -> int:
        """The spad_in rows read: `R = ceil(512 / dim)` with `wide`, else `ceil(256 / dim)`."""
        return exp_table_rows(config) if self.wide else table_rows(config)

    def check(self, config: ArrayConfig) -> None:
        need_unit(self, "wide " if self.wide else "",
                  OptionalUnit.ROW_UNIT if self.wide else OptionalUnit.TABLES, config)
        need_8bit_activations(self, "", config)
        self._need_rows(
            f"row + ceil({EXP_TABLE_BYTES if self.wide else TABLE_ENTRIES} / dim)",
            self.row + self.rows(config),
            depth(config, Memory.SPAD_IN),
            "spad_in",
            config,
        )

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        return (Access(Memory.SPAD_IN, self.row, self.row + self.rows(config) - 1, False),)
