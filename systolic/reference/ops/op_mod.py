"""Mod: the element-wise remainder of two tensors (numpy broadcasting)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import (
    FLOAT_TYPES,
    NUMERIC_TYPES,
    broadcast_shape,
    check_type,
    fold,
    int_attr,
)
from systolic.reference.ops.base import Op, TensorInfo


class Mod(Op):
    """Mod-10, -13 (the later version only widens the types). fmod=0 (integers only): the
    remainder takes the divisor's sign, as Python's %; fmod=1: the dividend's, as C's fmod.
    An integer division by zero is a ModelError (ONNX leaves it undefined)."""

    op_type = "Mod"
    since_versions = (10, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.fmod = int_attr(self, "fmod", 0)
        if self.fmod not in (0, 1):
            raise self.error(f"attribute 'fmod' must be 0 or 1, got {self.fmod}")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        a, b = inputs
        assert a is not None and b is not None
        check_type(self, a, NUMERIC_TYPES, "A")
        if b.dtype != a.dtype:
            raise self.error(f"A and B must have one element type, got {a.dtype.short} and "
                             f"{b.dtype.short}")
        if a.dtype in FLOAT_TYPES and not self.fmod:
            raise self.error("a float Mod needs fmod=1 (the ONNX operator's rule)")
        shape = broadcast_shape(self, a.shape, b.shape)
        return fold(self, inputs, [TensorInfo(a.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        a, b = inputs
        assert a is not None and b is not None
        if b.dtype.kind in "iu" and not np.all(b):
            raise self.error("integer division by zero")
        out = np.fmod(a, b) if self.fmod else np.mod(a, b)
        return [np.asarray(out, dtype=a.dtype)]


OPS = (Mod,)
