"""Tile: repeat a tensor along every axis by the counts of the `repeats` input."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops._shared import NUMERIC_TYPES, check_type, fold, ints_of, known_ints
from systolic.reference.ops.base import Op, TensorInfo


class Tile(Op):
    """Tile-6, -13: output dimension i is input dimension i times repeats[i]; repeats is a 1-D
    int64 tensor with one non-negative count per input axis. Tile-1 takes scalar inputs
    `tiles` and `axis` instead: `tiles` copies along that one axis."""

    op_type = "Tile"
    since_versions = (1, 6, 13)

    def _given(self, rank: int, values: Sequence[tuple[int, ...] | None]) -> tuple[int, ...]:
        """The per-axis repeats from the known values of the inputs after the data."""
        if self.version >= 6:
            assert values[0] is not None
            return self._repeats(rank, values[0])
        if len(values) != 2 or values[0] is None or values[1] is None \
                or len(values[0]) != 1 or len(values[1]) != 1:
            raise self.error("Tile-1 needs the scalar inputs tiles and axis")
        axis = values[1][0]
        if not 0 <= axis < rank:
            raise self.error(f"axis {axis} is out of range for a rank-{rank} input")
        return self._repeats(rank, tuple(values[0][0] if i == axis else 1 for i in range(rank)))

    def _repeats(self, rank: int, repeats: tuple[int, ...]) -> tuple[int, ...]:
        if len(repeats) != rank or any(r < 0 for r in repeats):
            raise self.error(f"repeats {list(repeats)} must hold one non-negative count for "
                             f"each of the input's {rank} axes")
        return repeats

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        check_type(self, x, NUMERIC_TYPES | {DataType.BOOL}, "input")
        names = ("repeats",) if self.version >= 6 else ("tiles", "axis")
        repeats = self._given(len(x.shape), [known_ints(self, info, name)
                                             for info, name in zip(rest, names, strict=False)])
        shape = tuple(d * r for d, r in zip(x.shape, repeats, strict=True))
        return fold(self, inputs, [TensorInfo(x.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        return [np.tile(x, self._given(x.ndim, [ints_of(v) for v in rest]))]


OPS = (Tile,)
