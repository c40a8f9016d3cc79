"""Clip: y = min(max(x, min), max)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import NUMERIC_TYPES, check_type, float_attr, fold
from systolic.reference.ops.base import Op, TensorInfo

_FLOAT_MAX = 3.4028234663852886e38


class Clip(Op):
    """Clip-1 and -6: bounds are the `min`/`max` attributes (Clip-1: absent means unbounded;
    Clip-6: they default to -/+ the largest float32). Clip-11, -12, -13: bounds are optional
    scalar inputs 2 and 3 of X's type (12 adds integer types). Bounds are applied max first,
    then min, so min > max gives max everywhere, as numpy.clip does."""

    op_type = "Clip"
    since_versions = (1, 6, 11, 12, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.low: float | None = None
        self.high: float | None = None
        if version < 11:
            default = None if version < 6 else _FLOAT_MAX
            if "min" in attrs or default is not None:
                self.low = float_attr(self, "min", -_FLOAT_MAX)
            if "max" in attrs or default is not None:
                self.high = float_attr(self, "max", _FLOAT_MAX)
        elif "min" in attrs or "max" in attrs:
            raise self.error("from Clip-11 the bounds are inputs, not attributes")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *bounds = inputs
        assert x is not None
        check_type(self, x, NUMERIC_TYPES, "X")
        if len(bounds) > (2 if self.version >= 11 else 0):
            raise self.error(f"takes at most {1 + len(bounds)} inputs in this version")
        for bound in bounds:
            if bound is not None and (bound.dtype != x.dtype or bound.size != 1):
                raise self.error(f"min and max must be scalars of type {x.dtype.short}")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *bounds = inputs
        assert x is not None
        low: np.ndarray | float | None = self.low
        high: np.ndarray | float | None = self.high
        if self.version >= 11:
            low = bounds[0] if bounds else None
            high = bounds[1] if len(bounds) > 1 else None
        y = x
        if low is not None:
            y = np.maximum(y, np.asarray(low).astype(x.dtype).reshape(()))
        if high is not None:
            y = np.minimum(y, np.asarray(high).astype(x.dtype).reshape(()))
        return [np.array(y, dtype=x.dtype)]


OPS = (Clip,)
