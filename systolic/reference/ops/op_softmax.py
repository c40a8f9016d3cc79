"""Softmax and LogSoftmax.

Before opset 13 the input is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])] and the
normalisation runs over the whole second dimension (axis defaults to 1). From opset 13 it
runs over the single axis `axis` (default -1). A negative axis counts from the end in every
version (exporters emit it before 11 too). The maximum is subtracted first for stability.
"""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold, int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class _Softmax(Op):
    log: bool = False

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", -1 if version >= 13 else 1)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "input")
        normalize_axis(self, self.axis, max(len(x.shape), 1))
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        axis = normalize_axis(self, self.axis, max(x.ndim, 1))
        if self.version < 13:
            rows = int(np.prod(x.shape[:axis], dtype=np.int64))
            data = x.reshape(rows, -1)
            axis = 1
        else:
            data = x
        shifted = data - data.max(axis=axis, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=axis, keepdims=True)
        y = shifted - np.log(total) if self.log else exp / total
        return [y.reshape(x.shape).astype(x.dtype, copy=False)]


class Softmax(_Softmax):
    """Softmax-1, -11 (2-D coercion), -13 (one axis)."""

    op_type = "Softmax"
    since_versions = (1, 11, 13)


class LogSoftmax(_Softmax):
    """LogSoftmax-1, -11 (2-D coercion), -13 (one axis)."""

    op_type = "LogSoftmax"
    since_versions = (1, 11, 13)
    log = True


OPS = (LogSoftmax, Softmax)
