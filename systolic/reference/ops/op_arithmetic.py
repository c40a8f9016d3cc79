"""Binary arithmetic: Add, Sub, Mul, Div, Pow.

Before opset 7 these take `broadcast` and `axis` attributes (see `legacy_broadcast`); from
opset 7 they broadcast like numpy. Integer Div truncates toward zero (C semantics).
"""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import (
    NUMERIC_TYPES,
    broadcast_shape,
    check_type,
    fold,
    int_attr,
    legacy_broadcast,
)
from systolic.reference.ops.base import Op, TensorInfo


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        if np.any(b == 0):
            raise ZeroDivisionError
        quotient = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
        negative = (a < 0) ^ (b < 0)
        result: np.ndarray = np.where(negative, -quotient, quotient)
        return result.astype(a.dtype)
    return np.asarray(np.divide(a, b))


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return a ** b in a's type: float bases raise to b converted to a's type, integer
    bases go through float64 when the exponent is a float or negative."""
    with np.errstate(all="ignore"):
        if a.dtype.kind == "f":
            return np.asarray(np.power(a, b.astype(a.dtype)))
        if b.dtype.kind == "f" or np.any(b < 0):
            return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
        return np.asarray(np.power(a, b.astype(a.dtype)))


class _Binary(Op):
    """A binary operator; subclasses define `compute` and set `legacy_until` (the first version
    that broadcasts like numpy)."""

    mixed_types_from: ClassVar[int] = 10**9
    legacy_until: ClassVar[int] = 7
    types: ClassVar[frozenset[DataType]] = NUMERIC_TYPES
    boolean_result: ClassVar[bool] = False
    """True for comparisons and logical operators, whose output is bool."""

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.legacy = version < self.legacy_until
        if self.legacy:
            self.broadcast = int_attr(self, "broadcast", 0)
            axis = self.attr("axis")
            self.axis = None if axis is None else int_attr(self, "axis", 0)
        else:
            for name in ("broadcast", "axis"):
                if name in attrs:
                    raise self.error(f"attribute {name!r} exists only before opset "
                                     f"{self.legacy_until}; remove it")

    def _b_shape(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        """Return the shape B takes before numpy broadcasting."""
        if self.legacy:
            return legacy_broadcast(self, a, b, self.broadcast, self.axis)
        return b

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b = inputs
        assert a is not None and b is not None
        check_type(self, a, self.types, "A")
        if a.dtype != b.dtype and self.version < self.mixed_types_from:
            raise self.error(f"A is {a.dtype.short} but B is {b.dtype.short}")
        check_type(self, b, self.types, "B")
        shape = broadcast_shape(self, a.shape, self._b_shape(a.shape, b.shape))
        if self.legacy and shape != a.shape:
            raise self.error(f"B {list(b.shape)} would enlarge A {list(a.shape)}")
        dtype = DataType.BOOL if self.boolean_result else a.dtype
        return fold(self, inputs, [TensorInfo(dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b = inputs
        assert a is not None and b is not None
        b = b.reshape(self._b_shape(a.shape, b.shape))
        try:
            result = self.compute(a, b)
        except ZeroDivisionError:
            raise self.error("integer division by zero") from None
        dtype = np.dtype(np.bool_) if self.boolean_result else a.dtype
        return [np.asarray(result).astype(dtype, copy=False)]


class Add(_Binary):
    """Add-1, -6 (broadcast/axis attributes; Add-1's consumed_inputs is ignored), -7, -13, -14."""

    op_type = "Add"
    since_versions = (1, 6, 7, 13, 14)
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.add(a, b))


class Sub(_Binary):
    """Sub-1, -6 (broadcast/axis attributes), -7, -13, -14."""

    op_type = "Sub"
    since_versions = (1, 6, 7, 13, 14)
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.subtract(a, b))


class Mul(_Binary):
    """Mul-1, -6 (broadcast/axis attributes), -7, -13, -14."""

    op_type = "Mul"
    since_versions = (1, 6, 7, 13, 14)
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.multiply(a, b))


class Div(_Binary):
    """Div-1, -6 (broadcast/axis attributes), -7, -13, -14; integers truncate toward zero."""

    op_type = "Div"
    since_versions = (1, 6, 7, 13, 14)
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(_truncating_divide(a, b))


class Pow(_Binary):
    """Pow-1 (broadcast/axis attributes), -7, and -12, -13, -15 where the exponent may have
    another type than the base; the result has the base's type."""

    op_type = "Pow"
    since_versions = (1, 7, 12, 13, 15)
    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(_power(a, b))
    mixed_types_from = 12


OPS = (Add, Div, Mul, Pow, Sub)
