"""SOFTMAX: softmax over rows of int8 values with the exp table (ST, vector unit).

docs/isa.md, "SOFTMAX and the exp table": for each of `m` tensor rows, the `length` int8
elements held in `C = ceil(length / dim)` spad_in rows from `in_row + i*C` become `length`
requantized outputs `y_e` through the exp table `E` (loaded by a TABLE with `wide`) and one
reciprocal per row; output row i is written at `row_base(i)` of the row pattern.
docs/numeric-contract.md, "Softmax", gives the arithmetic (`sim/golden` computes it).
"""

import dataclasses
from typing import ClassVar

from systolic.isa.fields import Field
from systolic.isa.instruction_base import Unit
from systolic.isa.row_instruction import RowInstruction, row_chunks, row_instruction_fields

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

softmax_row_chunks = row_chunks
"""`C = ceil(length / dim)`: the spad_in rows that hold one tensor row of `length`
(`row_instruction.row_chunks`, shared with LAYERNORM)."""


@dataclasses.dataclass(frozen=True)
class Softmax(RowInstruction):
    """SOFTMAX: softmax of `m` rows of `length` int8 values from spad_in rows `in_row ..`
    (`ceil(length / dim)` per row), requantized with (`multiplier`, `shift`, `zero_point`,
    `lo`, `hi`) and written out (checks and footprint: `RowInstruction`)."""

    OPCODE: ClassVar[int] = 0x0B
    MNEMONIC: ClassVar[str] = "SOFTMAX"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = row_instruction_fields()

    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    flip_sign: bool = False
