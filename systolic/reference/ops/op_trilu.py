"""Trilu: keep the upper or lower triangle of the last two axes (causal attention masks)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class Trilu(Op):
    """Trilu-14: `upper`=1 keeps the elements on and above diagonal k (an optional scalar
    int64 input, default 0; positive k moves up-right), `upper`=0 those on and below it;
    the others become zero (False). The input must have rank 2 or more; any element type."""

    op_type = "Trilu"
    since_versions = (14,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.upper = int_attr(self, "upper", 1) != 0

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        if len(x.shape) < 2:
            raise self.error(f"input must have rank 2 or more, got shape {list(x.shape)}")
        k = rest[0] if rest else None
        if k is not None and (k.dtype != DataType.INT64 or k.size != 1):
            raise self.error(f"k must be one int64, got {k.dtype.short} of shape {list(k.shape)}")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        k = int(rest[0].reshape(-1)[0]) if rest and rest[0] is not None else 0
        keep = np.triu if self.upper else np.tril
        return [keep(x, k).astype(x.dtype, copy=False)]


OPS = (Trilu,)
