"""Variadic element-wise operators: Sum, Max, Min.

Before opset 8 every input must have the same shape; from opset 8 they broadcast like numpy.
"""

from collections.abc import Sequence
from functools import reduce

import numpy as np

from systolic.reference.ops._shared import NUMERIC_TYPES, broadcast_shape, check_type, fold
from systolic.reference.ops.base import Op, TensorInfo


class _Variadic(Op):
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError


    def _shape(self, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
        if not shapes:
            raise self.error("needs at least one input")
        if self.version < 8:
            if any(s != shapes[0] for s in shapes):
                raise self.error(f"inputs have shapes {[list(s) for s in shapes]}; before "
                                 "opset 8 they must all be equal")
            return shapes[0]
        return broadcast_shape(self, *shapes)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        given = [info for info in inputs if info is not None]
        shape = self._shape([info.shape for info in given])
        for info in given:
            check_type(self, info, NUMERIC_TYPES, "an input")
            if info.dtype != given[0].dtype:
                raise self.error("all inputs must have the same element type")
        return fold(self, inputs, [TensorInfo(given[0].dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        given = [x for x in inputs if x is not None]
        shape = self._shape([x.shape for x in given])
        result = reduce(self.compute, given)
        return [np.broadcast_to(result, shape).astype(given[0].dtype)]


class Sum(_Variadic):
    """Sum-1 (consumed_inputs ignored), -6, -8 (broadcasting), -13."""

    op_type = "Sum"
    since_versions = (1, 6, 8, 13)
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.add(a, b))


class Max(_Variadic):
    """Max-1, -6, -8 (broadcasting), -12, -13 (wider types). NaN propagates."""

    op_type = "Max"
    since_versions = (1, 6, 8, 12, 13)
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.maximum(a, b))


class Min(_Variadic):
    """Min-1, -6, -8 (broadcasting), -12, -13 (wider types). NaN propagates."""

    op_type = "Min"
    since_versions = (1, 6, 8, 12, 13)
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.minimum(a, b))


OPS = (Max, Min, Sum)
