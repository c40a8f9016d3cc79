"""LAYERNORM's arithmetic, bit-exact (docs/isa.md "LAYERNORM", docs/numeric-contract.md "Layer
normalization").

Per row: exact sums in int64, the row's (r, k) from `systolic.isa.layernorm.inverse_sqrt` on
Python integers (one per row), then every element vectorised: `|t_e * r| < 2^55` and
`|p_e * multiplier| < 2^55` fit int64; the roundings are `round_shift_int64` (round half to
even).
"""

import numpy as np

from systolic.isa.layernorm import NORMALIZED_BITS, SQRT_BITS, inverse_sqrt
from systolic.isa.requant import MULTIPLIER_BITS, round_shift_int64

__all__ = ["layernorm_rows"]


def layernorm_rows(x: np.ndarray, in_zero_point: int, eps: int, multiplier: int, shift: int,
                   zero_point: int, lo: int, hi: int) -> np.ndarray:
    """Return LAYERNORM's outputs for each row of the int8 matrix `x` (m x length, int64):
    with `d = x - in_zero_point`, `S1 = sum d`, `S2 = sum d^2`, `(r, k) =
    inverse_sqrt(H*S2 - S1^2 + eps)`, `p_e = rhe((H*d_e - S1) * r / 2^(14 + k))`, the output
    `clamp(rhe(p_e * multiplier / 2^(31 + shift)) + zero_point, lo, hi)`."""
    h = x.shape[1]
    d = x.astype(np.int64) - in_zero_point
    s1 = d.sum(axis=1)
    s2 = (d * d).sum(axis=1)
    scales = [inverse_sqrt(h * int(a) - int(b) * int(b) + eps) for a, b in zip(s2, s1, strict=True)]
    r = np.array([[root] for root, _ in scales], dtype=np.int64).reshape(-1, 1)
    k = np.array([[shift_k] for _, shift_k in scales], dtype=np.int64).reshape(-1, 1)
    t = h * d - s1[:, None]
    p = round_shift_int64(t * r, SQRT_BITS - NORMALIZED_BITS + k)
    q = round_shift_int64(p * int(multiplier), MULTIPLIER_BITS + shift)
    out: np.ndarray = np.clip(q + zero_point, lo, hi)
    return out
