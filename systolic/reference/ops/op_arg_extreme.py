"""ArgMax and ArgMin: the int64 index of the largest or smallest element along one axis."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import NUMERIC_TYPES, check_type, fold, int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class _ArgExtreme(Op):
    """axis defaults to 0, keepdims to 1; the first index of a tie is chosen unless
    select_last_index=1 (from opset 12). A NaN counts as the extreme, as numpy has it."""

    largest: bool

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", 0)
        self.keepdims = bool(int_attr(self, "keepdims", 1))
        if version < 12 and "select_last_index" in attrs:
            raise self.error("attribute 'select_last_index' exists only from opset 12; "
                             "remove it or convert the model")
        self.last = bool(int_attr(self, "select_last_index", 0))

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, NUMERIC_TYPES, "data")
        axis = normalize_axis(self, self.axis, len(x.shape))
        if x.shape[axis] == 0:
            raise self.error(f"axis {self.axis} has no elements to choose from")
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)) if self.keepdims \
            else x.shape[:axis] + x.shape[axis + 1:]
        return fold(self, inputs, [TensorInfo(DataType.INT64, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        axis = normalize_axis(self, self.axis, x.ndim)
        find = np.argmax if self.largest else np.argmin
        if self.last:
            flipped = np.flip(x, axis=axis)
            index = x.shape[axis] - 1 - find(flipped, axis=axis, keepdims=True)
        else:
            index = find(x, axis=axis, keepdims=True)
        if not self.keepdims:
            index = np.squeeze(index, axis=axis)
        return [np.asarray(index, dtype=np.int64)]


class ArgMax(_ArgExtreme):
    """ArgMax-1, -11 (negative axis), -12 (select_last_index), -13."""

    op_type = "ArgMax"
    since_versions = (1, 11, 12, 13)
    largest = True


class ArgMin(_ArgExtreme):
    """ArgMin-1, -11 (negative axis), -12 (select_last_index), -13."""

    op_type = "ArgMin"
    since_versions = (1, 11, 12, 13)
    largest = False


OPS = (ArgMax, ArgMin)
