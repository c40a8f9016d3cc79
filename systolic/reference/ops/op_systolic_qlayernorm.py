"""systolic.QLayerNorm: layer normalization of an 8-bit tensor from exact row sums and one
reciprocal square root per row (the accelerator's LAYERNORM instruction, docs/numeric-contract.md
"Layer normalization"), vectorised over rows in int64 (every intermediate fits exactly)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs
from systolic.isa.layernorm import NORMALIZED_BITS, SQRT_BITS
from systolic.isa.requant import MULTIPLIER_BITS
from systolic.reference.ops._row_ops import RowScaling, row_length
from systolic.reference.ops._shared import int_attr
from systolic.reference.ops._systolic import OutputStage, check_eight_bit, round_shift, type_range
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["MAX_ROW_LENGTH", "QLayerNorm", "inverse_sqrt_rows", "layernorm_rows"]

MAX_ROW_LENGTH = 65535
"""The longest row LAYERNORM normalizes (its u16 `length`)."""
_EPS_MAX = 2**32 - 1
_POWERS = np.left_shift(np.int64(1), np.arange(63, dtype=np.int64))


def _isqrt(n: np.ndarray) -> np.ndarray:
    """floor(sqrt(n)) of int64 `n` in [0, 2^60], exactly: the float root corrected by +-1."""
    r = np.floor(np.sqrt(n.astype(np.float64))).astype(np.int64)
    while np.any(too_big := r * r > n):
        r -= too_big
    while np.any(too_small := (r + 1) * (r + 1) <= n):
        r += too_small
    return r


def inverse_sqrt_rows(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (r, k) for each V >= 0 (int64, < 2^62): k = max(0, ceil((bitlen(V) - 30) / 2)),
    Vn = V >> 2k, r = isqrt(floor(2^60 / Vn)) (0 when Vn is 0); `systolic.isa.layernorm.
    inverse_sqrt` on every element."""
    bits = np.searchsorted(_POWERS, v, side="right")  # bitlen(V): the powers of 2 <= V
    k = np.maximum(0, (bits - SQRT_BITS + 1) // 2).astype(np.int64)
    vn = v >> (2 * k)
    r = _isqrt((np.int64(1) << (2 * SQRT_BITS)) // np.maximum(vn, 1))
    return np.where(vn == 0, 0, r), k


def layernorm_rows(d: np.ndarray, eps: int, multiplier: int, shift: int) -> np.ndarray:
    """Return rhe(p_e * multiplier / 2^(31 + shift)) (before the zero point and clamp) for each
    row of `d` (int64, the inputs minus their zero point, m x H): with S1 = sum d, S2 = sum d^2,
    V = H*S2 - S1^2 + eps and (r, k) = `inverse_sqrt_rows(V)`,
    p_e = rhe((H*d_e - S1) * r / 2^(14 + k))."""
    h = d.shape[1]
    s1 = d.sum(axis=1, keepdims=True)
    s2 = (d * d).sum(axis=1, keepdims=True)
    r, k = inverse_sqrt_rows(h * s2 - s1 * s1 + eps)
    p = round_shift((h * d - s1) * r, SQRT_BITS - NORMALIZED_BITS + k)
    return round_shift(p * int(multiplier), MULTIPLIER_BITS + shift)


class QLayerNorm(Op):
    """systolic.QLayerNorm-1: Y = QLayerNorm(X), X uint8 or int8 of rank >= 1.

    Attributes: axis (default -1): each row is X flattened from `axis` on (rows =
    prod(shape[:axis]), as LayerNormalization's axis), of 1 .. 65535 elements;
    x_zero_point (in X's type, default 0); eps (0 .. 2^32 - 1, default 0: the mapper's
    rhe(H^2 eps_real / s_x^2)); multiplier (signed int32) and shift (-31..31) of 1 / (2^16 s_y);
    y_zero_point, y_type (2 uint8, 3 int8), y_lo, y_hi. Per row of H elements, d_e = X_e -
    x_zero_point, S1 = sum d, S2 = sum d^2, V = H S2 - S1^2 + eps,
    k = max(0, ceil((bitlen(V) - 30) / 2)), r = isqrt(floor(2^60 / (V >> 2k))) (0 when
    V >> 2k is 0), p_e = rhe((H d_e - S1) r / 2^(14 + k)),
    Y_e = clamp(rhe(p_e multiplier / 2^(31 + shift)) + y_zero_point, y_lo, y_hi).
    Y has X's shape. No gamma and beta (QMul and QAdd along the last axis apply them).
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QLayerNorm"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.scaling = RowScaling(self)
        self.x_zero_point = int_attr(self, "x_zero_point", 0)
        self.eps = int_attr(self, "eps", 0)
        if not 0 <= self.eps <= _EPS_MAX:
            raise self.error(f"eps must lie in [0, {_EPS_MAX}], got {self.eps}")
        self.stage = OutputStage(self)

    def _row_length(self, shape: Sequence[int]) -> tuple[int, int]:
        """Return (the axis, the row length H), checked."""
        return row_length(self, self.scaling.axis, shape, MAX_ROW_LENGTH)

    def _check_zero_point(self, info: TensorInfo) -> None:
        lo, hi = type_range(info.dtype)
        if not lo <= self.x_zero_point <= hi:
            raise self.error(f"x_zero_point {self.x_zero_point} is outside X's range "
                             f"[{lo}, {hi}]")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_eight_bit(self, x, "X")
        self._check_zero_point(x)
        self._row_length(x.shape)
        return [TensorInfo(self.stage.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        _, length = self._row_length(x.shape)
        if x.size == 0:
            return [np.zeros(x.shape, self.stage.dtype.numpy)]
        d = x.astype(np.int64).reshape(-1, length) - self.x_zero_point
        q = layernorm_rows(d, self.eps, self.scaling.multiplier, self.scaling.shift)
        return [self.stage.finish(q).reshape(x.shape)]


OPS = (QLayerNorm,)
