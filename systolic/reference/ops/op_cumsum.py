"""CumSum: the running sum of a tensor along one axis (inclusive or exclusive, either way)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import check_type, fold, int_attr, known_ints, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo

_TYPES = frozenset({DataType.FLOAT, DataType.DOUBLE, DataType.INT32, DataType.INT64,
                    DataType.UINT32, DataType.UINT64})


class CumSum(Op):
    """CumSum-11, -14: y[..., j, ...] = sum of x[..., i, ...] over i <= j along `axis` (a
    scalar int32/int64 input; must be known before running); `exclusive`=1 leaves x[j] out,
    `reverse`=1 sums from the end. The output has x's shape and type; integers wrap as in
    numpy's cumsum of that type."""

    op_type = "CumSum"
    since_versions = (11, 14)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.exclusive = int_attr(self, "exclusive", 0) != 0
        self.reverse = int_attr(self, "reverse", 0) != 0

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, axis = inputs
        assert x is not None and axis is not None
        check_type(self, x, _TYPES, "x")
        found = known_ints(self, axis, "axis")
        if found is None or len(found) != 1:
            raise self.error(f"axis must be one integer, got {found}")
        normalize_axis(self, found[0], max(len(x.shape), 1))
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, axis_value = inputs
        assert x is not None and axis_value is not None
        axis = normalize_axis(self, int(np.asarray(axis_value).reshape(-1)[0]), max(x.ndim, 1))
        data = np.flip(x, axis) if self.reverse else x
        total = np.cumsum(data, axis=axis, dtype=x.dtype)
        if self.exclusive:
            total = np.concatenate([np.zeros_like(np.take(total, [0], axis=axis)),
                                    np.take(total, range(x.shape[axis] - 1), axis=axis)],
                                   axis=axis)
        return [np.flip(total, axis) if self.reverse else total]


OPS = (CumSum,)
