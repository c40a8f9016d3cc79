"""Reductions that measure size: ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
ReduceLogSumExp (sentence-embedding normalization, log-likelihoods), on the reduce family's
base (op_reduce.py): axes an attribute before version 18 and an optional input from it."""

from typing import ClassVar

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops.op_reduce import _Reduce

_VERSIONS = (1, 11, 13, 18)
_TYPES = frozenset({DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16, DataType.INT32,
                    DataType.INT64, DataType.UINT32, DataType.UINT64})
"""The spec's element types for these five reductions (every version): no 8- or 16-bit
integers."""


class _Norm(_Reduce):
    types: ClassVar[frozenset[DataType]] = _TYPES


def _wide(x: np.ndarray) -> type:
    """float64 for floats; int64/uint64 for integers (wrapped back afterwards)."""
    if x.dtype.kind == "f":
        return np.float64
    return np.uint64 if x.dtype.kind == "u" else np.int64


class ReduceL1(_Norm):
    """ReduceL1-1, -11, -13, -18: the sum of absolute values (float64 accumulation rounded
    once; integers wrap)."""

    op_type = "ReduceL1"
    since_versions = _VERSIONS

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.asarray(np.sum(np.abs(x.astype(_wide(x))), axis=axes, keepdims=True))


class ReduceSumSquare(_Norm):
    """ReduceSumSquare-1, -11, -13, -18: the sum of squares (float64 accumulation rounded
    once; integers wrap)."""

    op_type = "ReduceSumSquare"
    since_versions = _VERSIONS

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        wide: np.ndarray = x.astype(_wide(x))
        return np.asarray(np.sum(wide * wide, axis=axes, keepdims=True))


class ReduceL2(_Norm):
    """ReduceL2-1, -11, -13, -18: the square root of the sum of squares, in float64 (an
    integer result is truncated to the input's type)."""

    op_type = "ReduceL2"
    since_versions = _VERSIONS

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        wide = x.astype(np.float64)
        return np.asarray(np.sqrt(np.sum(wide * wide, axis=axes, keepdims=True)))


class ReduceLogSum(_Norm):
    """ReduceLogSum-1, -11, -13, -18: log of the sum, in float64 (log 0 is -inf)."""

    op_type = "ReduceLogSum"
    since_versions = _VERSIONS

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        total = np.sum(x.astype(np.float64), axis=axes, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.log(total))


class ReduceLogSumExp(_Norm):
    """ReduceLogSumExp-1, -11, -13, -18: log of the sum of exponentials, in float64 and
    shifted by the maximum so that large inputs do not overflow; over no elements, -inf."""

    op_type = "ReduceLogSumExp"
    since_versions = _VERSIONS

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        wide = x.astype(np.float64)
        top = np.max(wide, axis=axes, keepdims=True, initial=-np.inf)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            return np.asarray(np.log(np.sum(np.exp(wide - top), axis=axes, keepdims=True)) + top)


OPS = (ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare)
