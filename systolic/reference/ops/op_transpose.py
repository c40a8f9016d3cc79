"""Transpose: permute axes (reverse them when `perm` is absent)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import fold, ints_attr
from systolic.reference.ops.base import Op, TensorInfo


class Transpose(Op):
    """Transpose-1, -13, -21, -23 (later versions only widen the types)."""

    op_type = "Transpose"
    since_versions = (1, 13, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.perm = ints_attr(self, "perm")

    def _perm(self, rank: int) -> tuple[int, ...]:
        if self.perm is None:
            return tuple(reversed(range(rank)))
        if sorted(self.perm) != list(range(rank)):
            raise self.error(f"perm {list(self.perm)} is not a permutation of {rank} axes")
        return self.perm

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        shape = tuple(x.shape[p] for p in self._perm(len(x.shape)))
        return fold(self, inputs, [TensorInfo(x.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [np.transpose(x, self._perm(x.ndim))]


OPS = (Transpose,)
