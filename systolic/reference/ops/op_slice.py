"""Slice: take a strided slice along some axes (Python slice semantics, clamped)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import fold, ints_attr, ints_of, known_ints, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class Slice(Op):
    """Slice-1 (starts, ends, axes attributes), -10 (starts, ends, axes, steps inputs), -11
    (negative axes), -13. Starts and ends are clamped as ONNX specifies, which is what Python
    slices do; a step of 0 is a ModelError."""

    op_type = "Slice"
    since_versions = (1, 10, 11, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if version < 10:
            self.starts = ints_attr(self, "starts")
            self.ends = ints_attr(self, "ends")
            self.axes = ints_attr(self, "axes")
            if self.starts is None or self.ends is None:
                raise self.error("attributes 'starts' and 'ends' are required")

    def _index(
        self, shape: tuple[int, ...], given: Sequence[tuple[int, ...] | None]
    ) -> tuple[slice, ...]:
        if self.version < 10:
            starts, ends, axes, steps = self.starts, self.ends, self.axes, None
        else:
            starts, ends, axes, steps = (list(given) + [None] * 4)[:4]
        if starts is None or ends is None:
            raise self.error("starts and ends are required")
        rank = len(shape)
        axes = axes if axes is not None else tuple(range(len(starts)))
        steps = steps if steps is not None else (1,) * len(starts)
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise self.error("starts, ends, axes and steps must have the same length")
        index = [slice(None)] * rank
        for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
            if step == 0:
                raise self.error("a step is 0")
            index[normalize_axis(self, axis, rank, "axis in axes")] = slice(start, end, step)
        return tuple(index)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        given = [known_ints(self, r, "starts, ends, axes and steps") for r in rest]
        index = self._index(x.shape, given)
        shape = tuple(len(range(*s.indices(d))) for s, d in zip(index, x.shape, strict=True))
        return fold(self, inputs, [TensorInfo(x.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        return [x[self._index(x.shape, [ints_of(r) for r in rest])].copy()]


OPS = (Slice,)
