"""The exp table and SOFTMAX's arithmetic, bit-exact (docs/isa.md "SOFTMAX and the exp table",
docs/numeric-contract.md "Softmax").

Every intermediate fits int64 exactly: `E[d] * r < 2^16 * 2^32`, `p * multiplier <= 2^17 *
2^31`; the roundings are `round_shift_int64` (round half to even).
"""

import numpy as np

from systolic.isa.requant import round_shift_int64
from systolic.isa.table import EXP_TABLE_BYTES

__all__ = ["RECIPROCAL_CAP", "RECIPROCAL_NUMERATOR", "exp_table_from_rows", "softmax_rows"]

RECIPROCAL_NUMERATOR = 1 << 46
"""r = floor(2^46 / S): the row sum's reciprocal, scaled so that p = E r / 2^31 is E / S in
units of 2^-15."""
RECIPROCAL_CAP = (1 << 32) - 1
"""The largest reciprocal (an unsigned 32-bit register): r's value when S is 0 or below 2^14."""


def exp_table_from_rows(rows: np.ndarray) -> np.ndarray:
    """Return the 256 u16 entries `E[e] = u8(s[2e]) + 256 u8(s[2e+1])` of spad_in `rows`
    (s[k] the k-th operand of the rows in order, seen as an unsigned byte) as int64."""
    data = rows.reshape(-1)[:EXP_TABLE_BYTES].astype(np.int64) & 0xFF
    entries: np.ndarray = data[0::2] + (data[1::2] << 8)
    return entries


def softmax_rows(x: np.ndarray, exp_table: np.ndarray, multiplier: int, shift: int,
                 zero_point: int, lo: int, hi: int) -> np.ndarray:
    """Return SOFTMAX's outputs for each row of the int8 matrix `x` (m x length, int64):
    `clamp(rhe(p_e * multiplier / 2^(31 + shift)) + zero_point, lo, hi)` with
    `p_e = rhe(E[mx - x_e] * r / 2^31)`, `r = min(floor(2^46 / S), 2^32 - 1)` (the cap also
    when S = 0), `S = sum_e E[mx - x_e]` and `mx` the row's maximum."""
    exps = exp_table[x.max(axis=1, keepdims=True) - x]
    sums = exps.sum(axis=1, keepdims=True)
    reciprocal = np.minimum(RECIPROCAL_NUMERATOR // np.maximum(sums, 1), RECIPROCAL_CAP)
    p = round_shift_int64(exps * reciprocal, 31)
    q = round_shift_int64(p * int(multiplier), 31 + shift)
    out: np.ndarray = np.clip(q + zero_point, lo, hi)
    return out
