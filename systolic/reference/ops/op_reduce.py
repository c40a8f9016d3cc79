"""Reductions over some axes: ReduceMax, ReduceMin, ReduceSum, ReduceProd (ReduceMean lives in
op_reduce_mean.py on the same base).

Axes are an attribute until the version in `axes_input_from` (13 for ReduceSum, 18 for the
others) and an optional int64 input from it, where `noop_with_empty_axes=1` makes an empty
or omitted axes list the identity. Otherwise no axes means every axis. keepdims defaults to 1.
"""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import (
    NUMERIC_TYPES,
    check_type,
    fold,
    int_attr,
    ints_attr,
    ints_of,
    known_ints,
    normalize_axis,
)
from systolic.reference.ops.base import Op, TensorInfo


class _Reduce(Op):
    axes_input_from: ClassVar[int] = 18
    types: ClassVar[frozenset[DataType]] = NUMERIC_TYPES

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.keepdims = bool(int_attr(self, "keepdims", 1))
        self.axes_input = version >= self.axes_input_from
        self.axes_attr = None if self.axes_input else ints_attr(self, "axes")
        if self.axes_input and "axes" in attrs:
            raise self.error(f"from {self.op_type}-{self.axes_input_from} axes is an input, not "
                             "an attribute: move it to the second input")
        self.noop = bool(int_attr(self, "noop_with_empty_axes", 0)) if self.axes_input else False

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """Return the reduction of `x` over `axes` (non-empty), with kept dimensions."""
        raise NotImplementedError

    def _axes(self, rank: int, given: tuple[int, ...] | None) -> tuple[int, ...]:
        axes = given if self.axes_input else self.axes_attr
        if not axes:
            return () if self.noop else tuple(range(rank))
        return tuple(sorted({normalize_axis(self, a, rank) for a in axes}))

    def _shape(self, shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        check_type(self, x, self.types, "data")
        given = known_ints(self, rest[0], "the axes input") if rest else None
        axes = self._axes(len(x.shape), given)
        return fold(self, inputs, [TensorInfo(x.dtype, self._shape(x.shape, axes))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        axes = self._axes(x.ndim, ints_of(rest[0]) if rest else None)
        if not axes:
            return [x.copy()]
        y = self.reduce(x, axes)
        if not self.keepdims:
            y = y.reshape(self._shape(x.shape, axes))
        return [np.asarray(y).astype(x.dtype, copy=False)]


def _wide(x: np.ndarray) -> type:
    """The accumulator type: float64 for floats, int64 or uint64 for integers (wrapped back to
    the input's width afterwards, as a same-width accumulator would)."""
    if x.dtype.kind == "f":
        return np.float64
    return np.uint64 if x.dtype.kind == "u" else np.int64


class ReduceMax(_Reduce):
    """ReduceMax-1, -11 (negative axes), -12 (8-bit types), -13, -18 (axes input), -20
    (bool). NaN propagates."""

    op_type = "ReduceMax"
    since_versions = (1, 11, 12, 13, 18, 20)
    types = NUMERIC_TYPES | {DataType.BOOL}

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.asarray(np.max(x, axis=axes, keepdims=True))


class ReduceMin(_Reduce):
    """ReduceMin-1, -11, -12, -13, -18 (axes input), -20 (bool). NaN propagates."""

    op_type = "ReduceMin"
    since_versions = (1, 11, 12, 13, 18, 20)
    types = NUMERIC_TYPES | {DataType.BOOL}

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.asarray(np.min(x, axis=axes, keepdims=True))


class ReduceSum(_Reduce):
    """ReduceSum-1, -11, -13 (axes input). Floats sum in float64 and round once; integers
    wrap."""

    op_type = "ReduceSum"
    since_versions = (1, 11, 13)
    axes_input_from = 13

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.asarray(np.sum(x, axis=axes, dtype=_wide(x), keepdims=True))


class ReduceProd(_Reduce):
    """ReduceProd-1, -11, -13, -18 (axes input). Floats multiply in float64 and round once;
    integers wrap."""

    op_type = "ReduceProd"
    since_versions = (1, 11, 13, 18)

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.asarray(np.prod(x, axis=axes, dtype=_wide(x), keepdims=True))


OPS = (ReduceMax, ReduceMin, ReduceProd, ReduceSum)
