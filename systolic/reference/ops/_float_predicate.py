"""The shared shape of IsNaN and IsInf: a bool tensor of a float input's shape."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["FloatPredicate"]


class FloatPredicate(Op):
    """An operator whose output is `holds(X)`: bool, of X's shape, X of a float type."""

    def holds(self, x: np.ndarray) -> np.ndarray:
        """Return the bool array of where the predicate holds for float `x`."""
        raise NotImplementedError

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "X")
        return fold(self, inputs, [TensorInfo(DataType.BOOL, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [np.asarray(self.holds(x))]
