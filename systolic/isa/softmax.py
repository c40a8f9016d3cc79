"""SOFTMAX: softmax over rows of int8 values with the exp table (ST, vector unit).

docs/isa.md, "SOFTMAX and the exp table": for each of `m` tensor rows, the `length` int8
elements held in `C = ceil(length / dim)` spad_in rows from `in_row + i*C` become `length`
requantized outputs `y_e` through the exp table `E` (loaded by a TABLE with `wide`) and one
reciprocal per row; output row i is written at `row_base(i)` of the row pattern.
docs/numeric-contract.md, "Softmax", gives the arithmetic (`sim/golden` computes it).
"""

import dataclasses
from typing import ClassVar

from systolic.config import ArrayConfig
from systolic.isa.fields import Field, layout, spec
from systolic.isa.instruction_base import ROW_PATTERN_SPECS, U16, U32, Unit
from systolic.isa.memories import Access, Memory, depth
from systolic.isa.store import INT8_RANGE, SHIFT_RANGE, RowWriter, check_clamp
from systolic.isa.table import need_8bit_activations

__all__ = [
    "SOFTMAX_DONE_CYCLES", "SOFTMAX_PASSES", "SOFTMAX_ROW_CYCLES", "Softmax", "softmax_row_chunks",
]

SOFTMAX_PASSES = 3
"""SOFTMAX reads each row's spad_in rows three times: the maximum, the sum, the outputs."""
SOFTMAX_ROW_CYCLES = 40
"""SOFTMAX's fixed cycles per row: the reciprocal and the pipeline (docs/isa.md: part of the
instruction's contract, which the cycle model and the hardware both keep)."""
SOFTMAX_DONE_CYCLES = 3
"""SOFTMAX's cycles after its last row's last write beat."""


def softmax_row_chunks(length: int, config: ArrayConfig) -> int:
    """`C = ceil(length / dim)`: the spad_in rows that hold one tensor row of `length`."""
    return -(-length // config.dim)


@dataclasses.dataclass(frozen=True)
class Softmax(RowWriter):
    """SOFTMAX: softmax of `m` rows of `length` int8 values from spad_in rows `in_row ..`
    (`ceil(length / dim)` per row), requantized with (`multiplier`, `shift`, `zero_point`,
    `lo`, `hi`) and written out."""

    OPCODE: ClassVar[int] = 0x0B
    MNEMONIC: ClassVar[str] = "SOFTMAX"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = layout(
        spec("flip_sign", 1, kind=bool),
        spec("length", U16, minimum=1),
        spec("shift", 8, **SHIFT_RANGE),  # type: ignore[arg-type]
        spec("zero_point", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("lo", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("hi", 8, **INT8_RANGE),  # type: ignore[arg-type]
        spec("in_row", U32),
        spec("m", U32, minimum=1),
        spec("multiplier", U32, signed=True),
        *ROW_PATTERN_SPECS,
    )

    in_row: int
    m: int
    length: int
    multiplier: int
    shift: int
    zero_point: int
    lo: int
    hi: int
    ext: int
    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    flip_sign: bool = False

    def _check_rules(self) -> None:
        check_clamp(self)

    def in_rows(self, config: ArrayConfig) -> int:
        """The spad_in rows read: `m * ceil(length / dim)`."""
        return self.m * softmax_row_chunks(self.length, config)

    def check(self, config: ArrayConfig) -> None:
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
