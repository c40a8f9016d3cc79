"""systolic.QTable: an element-wise function of one 8-bit tensor, given as its 256 results
(the accelerator's activation unit: TABLE, then COPY.lut or a STORE with the lut flag)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs, DataType
from systolic.reference.ops._shared import int_attr
from systolic.reference.ops._systolic import check_eight_bit
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["TABLE_SIZE", "QTable"]

TABLE_SIZE = 256
"""One entry per 8-bit input value."""

_FLIP = 128


class QTable(Op):
    """systolic.QTable-1: Y = QTable(X, Table), X uint8 or int8 of any shape.

    Table: int8, 256 entries, in the int8 (flipped) domain. Attribute `to` (2 = uint8,
    3 = int8) is Y's type. x_s8 = X if X is int8 else X - 128; y_s8 = Table[x_s8 + 128];
    Y = y_s8 if `to` is int8 else y_s8 + 128 (as uint8). Y has X's shape (the numeric
    contract's "Activation tables").
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QTable"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.required_attr("to")
        code = int_attr(self, "to", -1)
        if code not in (DataType.UINT8, DataType.INT8):
            raise self.error(f"to must be 2 (uint8) or 3 (int8), got {code}")
        self.to = DataType(code)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, table = inputs
        assert x is not None and table is not None
        check_eight_bit(self, x, "X")
        if table.dtype != DataType.INT8 or table.size != TABLE_SIZE:
            raise self.error(f"Table must be int8 with {TABLE_SIZE} entries, got "
                             f"{table.dtype.short} {list(table.shape)}")
        return [TensorInfo(self.to, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, table = inputs
        assert x is not None and table is not None
        if table.dtype != np.int8 or table.size != TABLE_SIZE:
            raise self.error(f"Table must be int8 with {TABLE_SIZE} entries, got "
                             f"{table.dtype} {list(table.shape)}")
        index = x.astype(np.int64) + (_FLIP if x.dtype == np.int8 else 0)
        y = table.reshape(-1).astype(np.int64)[index]
        if self.to == DataType.UINT8:
            y = y + _FLIP
        return [np.asarray(y.astype(self.to.numpy))]


OPS = (QTable,)
