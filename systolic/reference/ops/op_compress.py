"""Compress: keep the slices along an axis where a boolean condition is true."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning


class Compress(Op):
    """Compress-9, -11 (negative axis): the slices i along `axis` (the flattened input when
    `axis` is not set) with condition[i] true; a condition shorter than the axis leaves the
    rest out. The output size depends on the condition's values, so the condition must be
    known before running (a constant): the reference needs static shapes."""

    op_type = "Compress"
    since_versions = (9, 11)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        axis = self.attr("axis")
        if axis is not None and (not isinstance(axis, int) or isinstance(axis, bool)):
            raise self.error(f"attribute 'axis' must be an integer, got {axis!r}")
        self.axis = axis

    def _keep(self, shape: tuple[int, ...], condition: np.ndarray) -> tuple[int | None, np.ndarray]:
        if condition.ndim != 1:
            raise self.error(f"condition must be 1-D, got shape {list(condition.shape)}")
        if self.axis is None:
            axis, size = None, int(np.prod(shape, dtype=np.int64))
        else:
            axis = normalize_axis(self, self.axis, len(shape))
            size = shape[axis]
        if condition.size > size:
            raise self.error(f"condition has {condition.size} entries for an axis of {size}")
        return axis, np.flatnonzero(condition)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, condition = inputs
        assert x is not None and condition is not None
        if condition.dtype != DataType.BOOL:
            raise self.error(f"condition must be bool, got {condition.dtype.short}")
        if condition.value is None:
            raise ShapeKnownWhenRunning(
                f"node {self.node_label!r} (ai.onnx.Compress:{self.version}): its output size "
                "depends on the condition's values, which are known only when running; the "
                "reference needs static shapes (make the condition a constant)")
        axis, kept = self._keep(x.shape, condition.value)
        shape = (kept.size,) if axis is None else (
            *x.shape[:axis], kept.size, *x.shape[axis + 1:])
        return fold(self, inputs, [TensorInfo(x.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, condition = inputs
        assert x is not None and condition is not None
        axis, kept = self._keep(x.shape, condition)
        return [np.take(x.reshape(-1) if axis is None else x, kept, axis=axis or 0)]


OPS = (Compress,)
