"""Hardmax: 1 at the first maximum along an axis, 0 elsewhere."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold, int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class Hardmax(Op):
    """Hardmax-1, -11 (the input is seen as 2-D: dimensions before `axis` (default 1) by
    those from it), -13 (along the one axis `axis`, default -1). The first of equal maxima
    gets the 1; float types only."""

    op_type = "Hardmax"
    since_versions = (1, 11, 13)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", -1 if version >= 13 else 1)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "input")
        rank = len(x.shape)
        if self.version >= 13:
            normalize_axis(self, self.axis, rank)
        elif not -rank <= self.axis <= rank:
            raise self.error(f"axis {self.axis} is out of range for a rank-{rank} input")
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        if self.version >= 13:
            view, axis = x, normalize_axis(self, self.axis, x.ndim)
        else:
            cut = self.axis + x.ndim if self.axis < 0 else self.axis
            view, axis = x.reshape(int(np.prod(x.shape[:cut])), -1), 1
        first = np.expand_dims(np.argmax(view, axis=axis), axis)
        out = np.zeros_like(view)
        np.put_along_axis(out, first, 1, axis=axis)
        return [out.reshape(x.shape)]


OPS = (Hardmax,)
