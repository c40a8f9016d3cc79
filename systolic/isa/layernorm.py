"""LAYERNORM: layer normalization over rows of int8 values (ST, vector unit).

docs/isa.md, "LAYERNORM": for each of `m` tensor rows, the `length` int8 elements held in
`C = ceil(length / dim)` spad_in rows from `in_row + i*C` (as SOFTMAX holds them) become
`length` requantized outputs `y_e = clamp(rhe(p_e * multiplier / 2^(31 + shift)) +
zero_point, lo, hi)`, `p_e ~ 2^16 (x_e - mean) / sqrt(var + eps)`, computed from the row's exact
sums S1, S2 and one reciprocal square root per row (`inverse_sqrt`); output row i is written
at `row_base(i)` of the row pattern. docs/numeric-contract.md, "Layer normalization", gives the
arithmetic and why it is LayerNorm (`sim/golden` and the reference compute it).
"""

import dataclasses
import math
from typing import ClassVar

from systolic.isa.fields import Field, spec
from systolic.isa.instruction_base import U32, Unit
from systolic.isa.row_instruction import RowInstruction, row_instruction_fields
from systolic.isa.store import INT8_RANGE

__all__ = [
    "LAYERNORM_DONE_CYCLES", "LAYERNORM_PASSES", "LAYERNORM_ROW_CYCLES", "NORMALIZED_BITS",
    "SQRT_BITS", "LayerNorm", "inverse_sqrt", "norm_shift",
]

LAYERNORM_PASSES = 2
"""LAYERNORM reads each row's spad_in rows twice: the sums S1 and S2, then the outputs."""
LAYERNORM_ROW_CYCLES = 60
"""LAYERNORM's fixed cycles per row: V, k, the division, the square root and the pipeline
(docs/isa.md: part of the instruction's contract, kept by the cycle model and the hardware)."""
LAYERNORM_DONE_CYCLES = 3
"""LAYERNORM's cycles after its last row's last write beat."""
SQRT_BITS = 30
"""V is scaled by 4^-k below 2^30; r = isqrt(floor(2^60 / Vn)) <= 2^30."""
NORMALIZED_BITS = 16
"""p_e is the normalized value in units of 2^-16: p_e = rhe(t_e * r / 2^(14 + k))."""


def norm_shift(v: int) -> int:
    """k = max(0, ceil((bitlen(v) - 30) / 2)): the smallest k with v >> 2k < 2^30."""
    return max(0, (v.bit_length() - SQRT_BITS + 1) // 2)


def inverse_sqrt(v: int) -> tuple[int, int]:
    """Return (r, k) for `v = H*S2 - S1^2 + eps >= 0`: `k = norm_shift(v)`, `Vn = v >> 2k` and
    `r = isqrt(floor(2^60 / Vn))` (0 when Vn is 0), so that 1 / sqrt(v) ~ r / 2^(30 + k) with a
    relative error below 2^-15 (docs/numeric-contract.md, "Layer normalization")."""
    k = norm_shift(v)
    vn = v >> (2 * k)
    return (math.isqrt((1 << (2 * SQRT_BITS)) // vn) if vn else 0), k


@dataclasses.dataclass(frozen=True)
class LayerNorm(RowInstruction):
    """LAYERNORM: layer normalization of `m` rows of `length` int8 values (zero point
    `in_zero_point`) from spad_in rows `in_row ..` (`ceil(length / dim)` per row), `eps` added
    to `H*S2 - S1^2`, requantized with (`multiplier`, `shift`, `zero_point`, `lo`, `hi`) and
    written out (checks and footprint: `RowInstruction`)."""

    OPCODE: ClassVar[int] = 0x0C
    MNEMONIC: ClassVar[str] = "LAYERNORM"
    UNIT: ClassVar[Unit] = Unit.ST
    FIELDS: ClassVar[tuple[Field, ...]] = row_instruction_fields(
        narrow=(spec("in_zero_point", 8, **INT8_RANGE),),  # type: ignore[arg-type]
        wide=(spec("eps", U32),),
    )

    in_zero_point: int = 0
    eps: int = 0
    n0: int = 1
    row_stride0: int = 0
    row_stride1: int = 0
    flip_sign: bool = False
