"""ReduceMean: the mean over some axes."""

from collections.abc import Sequence

import numpy as np
from systolic.mapper.ir import Attrs

from ..op import Op, TensorInfo
from ._shared import (
    NUMERIC_TYPES,
    check_type,
    fold,
    int_attr,
    ints_attr,
    ints_of,
    known_ints,
    normalize_axis,
)


class ReduceMean(Op):
    """ReduceMean-1, -11 (negative axes), -13 (axes attribute), -18 (axes input and
    noop_with_empty_axes). No axes means every axis (or none with noop_with_empty_axes=1).
    keepdims defaults to 1. float16 is averaged in float32; integers in float64 and
    truncated back."""

    op_type = "ReduceMean"
    since_versions = (1, 11, 13, 18)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.keepdims = bool(int_attr(self, "keepdims", 1))
        self.axes_attr = ints_attr(self, "axes") if version < 18 else None
        if version >= 18 and "axes" in attrs:
            raise self.error("from ReduceMean-18 axes is an input, not an attribute")
        self.noop = bool(int_attr(self, "noop_with_empty_axes", 0)) if version >= 18 else False

    def _axes(self, rank: int, given: tuple[int, ...] | None) -> tuple[int, ...]:
        axes = self.axes_attr if self.version < 18 else given
        if not axes:
            return () if self.noop else tuple(range(rank))
        chosen = sorted({normalize_axis(self, a, rank) for a in axes})
        return tuple(chosen)

    def _shape(self, shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        check_type(self, x, NUMERIC_TYPES, "data")
        given = known_ints(self, rest[0], "the axes input") if rest else None
        axes = self._axes(len(x.shape), given)
        return fold(self, inputs, [TensorInfo(x.dtype, self._shape(x.shape, axes))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        axes = self._axes(x.ndim, ints_of(rest[0]) if rest else None)
        if not axes:
            return [x.copy()]
        acc = x.dtype if x.dtype in (np.float32, np.float64) else (
            np.float32 if x.dtype == np.float16 else np.float64)
        mean = x.mean(axis=axes, dtype=acc, keepdims=self.keepdims)
        return [np.asarray(mean).astype(x.dtype)]


OPS = (ReduceMean,)
