"""Bit operations on integers: BitShift, BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot."""

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import broadcast_shape, check_type, fold, str_attr
from systolic.reference.ops.base import Op, TensorInfo

UNSIGNED = frozenset({DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64})
INTEGERS = UNSIGNED | {DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64}


class _Binary(Op):
    """Two inputs of one integer type, broadcast as numpy does; the output has their type."""

    types: ClassVar[frozenset[DataType]] = INTEGERS

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b = inputs
        assert a is not None and b is not None
        check_type(self, a, self.types, "A")
        if b.dtype != a.dtype:
            raise self.error(f"both inputs must have one element type, got {a.dtype.short} and "
                             f"{b.dtype.short}")
        return fold(self, inputs, [TensorInfo(a.dtype, broadcast_shape(self, a.shape, b.shape))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b = inputs
        assert a is not None and b is not None
        broadcast_shape(self, a.shape, b.shape)
        return [np.asarray(self.compute(a, b)).astype(a.dtype, copy=False)]


class BitShift(_Binary):
    """BitShift-11: X shifted by Y bits, `direction` "LEFT" or "RIGHT" (required); unsigned
    types only. Bits shifted out are lost; a shift by the width or more gives 0."""

    op_type = "BitShift"
    since_versions = (11,)
    types = UNSIGNED

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.required_attr("direction")
        self.direction = str_attr(self, "direction", "")
        if self.direction not in ("LEFT", "RIGHT"):
            raise self.error(f"direction must be 'LEFT' or 'RIGHT', got {self.direction!r}")

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        width = a.dtype.itemsize * 8
        wide_b = np.minimum(b.astype(np.uint64), width)
        a64 = a.astype(np.uint64)
        big = wide_b >= width
        safe = np.where(big, 0, wide_b).astype(np.uint64)
        shifted = (a64 << safe) if self.direction == "LEFT" else (a64 >> safe)
        mask = np.uint64((1 << width) - 1) if width < 64 else np.uint64(2**64 - 1)
        return np.where(big, 0, shifted & mask)


class BitwiseAnd(_Binary):
    """BitwiseAnd-18."""

    op_type = "BitwiseAnd"
    since_versions = (18,)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.bitwise_and(a, b))


class BitwiseOr(_Binary):
    """BitwiseOr-18."""

    op_type = "BitwiseOr"
    since_versions = (18,)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.bitwise_or(a, b))


class BitwiseXor(_Binary):
    """BitwiseXor-18."""

    op_type = "BitwiseXor"
    since_versions = (18,)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.bitwise_xor(a, b))


class BitwiseNot(Op):
    """BitwiseNot-18: every bit inverted, in X's integer type."""

    op_type = "BitwiseNot"
    since_versions = (18,)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, INTEGERS, "X")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [np.asarray(np.invert(x))]


OPS = (BitShift, BitwiseAnd, BitwiseNot, BitwiseOr, BitwiseXor)
