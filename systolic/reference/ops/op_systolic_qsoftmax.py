"""systolic.QSoftmax: softmax of an 8-bit tensor with an exp table and one reciprocal per row
(the accelerator's SOFTMAX instruction, docs/numeric-contract.md "Softmax")."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs, DataType
from systolic.isa.requant import MULTIPLIER_BITS
from systolic.reference.ops._row_ops import RowScaling, row_length
from systolic.reference.ops._systolic import OutputStage, check_eight_bit, round_shift
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["EXP_ONE", "EXP_TABLE_SIZE", "QSoftmax", "softmax_rows"]

EXP_TABLE_SIZE = 256
"""One entry per distance 0 .. 255 below a row's maximum."""
EXP_ONE = 1 << 15
"""E[0]: the exp table holds exp(-s_x k) in units of 2^-15."""
_RECIPROCAL_NUMERATOR = 1 << 46
_RECIPROCAL_CAP = (1 << 32) - 1


def softmax_rows(rows: np.ndarray, table: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """Return rhe(p_e * multiplier / 2^(31 + shift)) (before the zero point and clamp) for each
    row of the int64 matrix `rows`: `p_e = rhe(E[mx - x_e] * r / 2^31)`, `r = min(floor(2^46 /
    S), 2^32 - 1)` (the cap also when S = 0), `S = sum_e E[mx - x_e]`, `mx` the row maximum."""
    exps = table[rows.max(axis=1, keepdims=True) - rows]
    sums = exps.sum(axis=1, keepdims=True)
    reciprocal = np.minimum(_RECIPROCAL_NUMERATOR // np.maximum(sums, 1), _RECIPROCAL_CAP)
    p = round_shift(exps * reciprocal, MULTIPLIER_BITS)
    return round_shift(p * int(multiplier), MULTIPLIER_BITS + shift)


class QSoftmax(Op):
    """systolic.QSoftmax-1: Y = QSoftmax(X, ExpTable), X uint8 or int8 of rank >= 1.

    ExpTable: uint16, 256 entries (the mapper fills E[k] = rhe(2^15 exp(-s_x k))). Attributes:
    axis (default -1): each row is X flattened from `axis` on (rows = prod(shape[:axis]), the
    2-D coercion of Softmax-1/11; from the last axis it is the single-axis softmax);
    multiplier (signed int32) and shift (-31..31) of 1 / (2^15 s_y); y_zero_point, y_type
    (2 uint8, 3 int8), y_lo, y_hi. Per row, with mx its maximum:
    S = sum_e E[mx - x_e]; r = min(floor(2^46 / S), 2^32 - 1) (2^32 - 1 when S = 0);
    p_e = rhe(E[mx - x_e] r / 2^31); Y_e = clamp(rhe(p_e multiplier / 2^(31 + shift)) +
    y_zero_point, y_lo, y_hi). X's zero point does not matter (softmax is shift-invariant).
    Y has X's shape.
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QSoftmax"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.scaling = RowScaling(self)
        self.stage = OutputStage(self)

    def _check_table(self, dtype: DataType, size: int, shape: Sequence[int]) -> None:
        if dtype != DataType.UINT16 or size != EXP_TABLE_SIZE:
            raise self.error(f"ExpTable must be u16 with {EXP_TABLE_SIZE} entries, got "
                             f"{dtype.short} {list(shape)}")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, table = inputs
        assert x is not None and table is not None
        check_eight_bit(self, x, "X")
        self._check_table(table.dtype, table.size, table.shape)
        row_length(self, self.scaling.axis, x.shape)
        return [TensorInfo(self.stage.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, table = inputs
        assert x is not None and table is not None
        self._check_table(DataType.from_numpy(table.dtype), table.size, table.shape)
        _, length = row_length(self, self.scaling.axis, x.shape)
        if x.size == 0:
            return [np.zeros(x.shape, self.stage.dtype.numpy)]
        rows = x.astype(np.int64).reshape(-1, length)
        q = softmax_rows(rows, table.reshape(-1).astype(np.int64), self.scaling.multiplier,
                         self.scaling.shift)
        return [self.stage.finish(q).reshape(x.shape)]


OPS = (QSoftmax,)
