"""NonZero: the indices of the non-zero elements of a tensor."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops.base import Op, TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning


class NonZero(Op):
    """NonZero-9, -13: an int64 tensor of shape (rank, count) whose columns are the indices
    of X's non-zero elements in row-major order (a scalar X counts as a 1-element vector,
    as onnxruntime does). The count depends on X's values, so X must be known before
    running (a constant, or folded from constants): the reference needs static shapes."""

    op_type = "NonZero"
    since_versions = (9, 13)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        if x.value is None:
            raise ShapeKnownWhenRunning(
                f"node {self.node_label!r} (ai.onnx.NonZero:{self.version}): its output size "
                "depends on the input's values, which are known only when running; the "
                "reference needs static shapes (make the input a constant)")
        (y,) = self.run([x.value])
        return [TensorInfo(DataType.INT64, y.shape, y)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        if x.ndim == 0:
            return [np.zeros((1, int(x != 0)), np.int64)]
        return [np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


OPS = (NonZero,)
