"""ReverseSequence: reverse the first sequence_lens[b] steps of every batch entry."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class ReverseSequence(Op):
    """ReverseSequence-10: with batch_axis (default 1) and time_axis (default 0), one of
    them 0 and the other 1, output[b, t] = input[b, len_b - 1 - t] for t < len_b =
    sequence_lens[b] (int64, one per batch entry, 0 <= len_b <= the time size, as onnx's own
    test cases use 0) and input[b, t] after it; any element type."""

    op_type = "ReverseSequence"
    since_versions = (10,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.batch_axis = int_attr(self, "batch_axis", 1)
        self.time_axis = int_attr(self, "time_axis", 0)
        if {self.batch_axis, self.time_axis} != {0, 1}:
            raise self.error(f"batch_axis {self.batch_axis} and time_axis {self.time_axis} "
                             "must be 0 and 1")

    def _check(self, shape: tuple[int, ...], lens: tuple[int, ...]) -> None:
        if len(shape) < 2:
            raise self.error(f"input must have rank 2 or more, got shape {list(shape)}")
        if lens != (shape[self.batch_axis],):
            raise self.error(f"sequence_lens has shape {list(lens)}; expected "
                             f"[{shape[self.batch_axis]}] (the batch size)")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, lens = inputs
        assert x is not None and lens is not None
        if lens.dtype != DataType.INT64:
            raise self.error(f"sequence_lens must be int64, got {lens.dtype.short}")
        self._check(x.shape, lens.shape)
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, lens = inputs
        assert x is not None and lens is not None
        self._check(x.shape, lens.shape)
        steps = x.shape[self.time_axis]
        if ((lens < 0) | (lens > steps)).any():
            raise self.error(f"sequence_lens {lens.tolist()} must be between 0 and {steps}")
        data = np.moveaxis(x, (self.batch_axis, self.time_axis), (0, 1))
        out = data.copy()
        for b, length in enumerate(lens.tolist()):
            out[b, :length] = data[b, :length][::-1]
        return [np.ascontiguousarray(np.moveaxis(out, (0, 1), (self.batch_axis, self.time_axis)))]


OPS = (ReverseSequence,)
