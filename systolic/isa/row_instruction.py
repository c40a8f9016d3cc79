"""The shape SOFTMAX and LAYERNORM share: `m` tensor rows of `length` int8 values read from
spad_in, one requantized output row each written along the row pattern.

docs/isa.md, "SOFTMAX and the exp table" and "LAYERNORM": tensor row i's `length` elements are
held in `C = ceil(length / dim)` spad_in rows from `in_row + i*C`; its `length` outputs are
requantized with (`multiplier`, `shift`, `zero_point`, `lo`, `hi`) and written at `row_base(i)`.
`row_instruction_fields` lays out the fields both encode (with an instruction's own fields
placed among them), `RowInstruction` the checks and memory ranges that follow from them.
"""

import dataclasses

from systolic.config import ArrayConfig
from systolic.config_units import OptionalUnit
from systolic.isa.fields import Field, layout, spec
from systolic.isa.instruction_base import ROW_PATTERN_SPECS, U16, U32
from systolic.isa.memories import Access, Memory, depth
from systolic.isa.store import INT8_RANGE, SHIFT_RANGE, RowWriter, check_clamp
from systolic.isa.table import need_8bit_activations, need_unit

__all__ = ["FieldSpec", "RowInstruction", "row_chunks", "row_instruction_fields"]

FieldSpec = tuple[str, int, bool, type, int | None, int | None]
"""One field declaration, as `fields.spec` returns it."""


def row_chunks(length: int, config: ArrayConfig) -> int:
    """`C = ceil(length / dim)`: the spad_in rows that hold one tensor row of `length`."""
    return -(-length // config.dim)


def row_instruction_fields(
    *, narrow: tuple[FieldSpec, ...] = (), wide: tuple[FieldSpec, ...] = ()
) -> tuple[Field, ...]:
    """Return the bit layout of a row instruction: flip_sign, length, the s8 fields shift,
    zero_point, lo, hi, then the instruction's `narrow` fields; in_row, m, multiplier, then
    its `wide` fields; then the row pattern (ext, n0, row_stride0, row_stride1)."""
    return layout(
        spec("flip_sign", 1, kind=bool),
        spec("length", U16, minimum=1),
        spec("shift", 8, **SHIFT_RANGE),  # type: ignore[arg-type]
        spec("zero_point", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("lo", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("hi", 8, **INT8_RANGE),  # type: ignore[arg-type]
        *narrow,
        spec("in_row", U32),
        spec("m", U32, minimum=1),
        spec("multiplier", U32, signed=True),
        *wide,
        *ROW_PATTERN_SPECS,
    )


@dataclasses.dataclass(frozen=True)
class RowInstruction(RowWriter):
    """The fields every row instruction requires (its subclass adds the row pattern's
    defaulted n0, row_stride0, row_stride1, flip_sign and its own fields, in its own order),
    and the checks and memory ranges they imply: `m * C` spad_in rows read from `in_row`,
    `m` rows of `length` operands written."""

    in_row: int
    m: int
    length: int
    multiplier: int
    shift: int
    zero_point: int
    lo: int
    hi: int
    ext: int

    def _check_rules(self) -> None:
        check_clamp(self)

    def in_rows(self, config: ArrayConfig) -> int:
        """The spad_in rows read: `m * ceil(length / dim)`."""
        return self.m * row_chunks(self.length, config)

    def check(self, config: ArrayConfig) -> None:
        need_unit(self, "", OptionalUnit.ROW_UNIT, config)
        need_8bit_activations(self, "", config)
        self._need_rows(
            "in_row + m * ceil(length / dim)",
            self.in_row + self.in_rows(config),
            depth(config, Memory.SPAD_IN),
            "spad_in",
            config,
        )
        self._need_writable(config)

    def written_rows(self) -> int:
        return self.m

    def row_lanes(self) -> int:
        return self.length

    def footprint(self, config: ArrayConfig) -> tuple[Access, ...]:
        last = self.in_row + self.in_rows(config) - 1
        return (Access(Memory.SPAD_IN, self.in_row, last, False), self.written(config))
