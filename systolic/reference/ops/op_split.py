"""Split: cut a tensor into pieces along one axis."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import (
    fold,
    int_attr,
    ints_attr,
    ints_of,
    known_ints,
    normalize_axis,
)
from systolic.reference.ops.base import Op, TensorInfo


class Split(Op):
    """Split-1 (sizes from input 2 or the `split` attribute), -2, -11 (negative axis; sizes
    from the attribute), -13 (sizes from input 2), -18 (`num_outputs`). Without sizes the
    axis is split evenly into as many outputs as the node has (`num_outputs` must then be
    `Op.num_outputs`, set by whoever makes the op); with num_outputs the last piece may be smaller."""

    op_type = "Split"
    since_versions = (1, 2, 11, 13, 18)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", 0)
        self.split_attr = ints_attr(self, "split") if version < 13 else None
        if version >= 13 and "split" in attrs:
            raise self.error("from Split-13 the sizes are input 2, not an attribute")
        self.num_outputs_attr = (
            int_attr(self, "num_outputs", 0) if version >= 18 and "num_outputs" in attrs
            else None
        )
        if self.num_outputs_attr is not None and self.num_outputs_attr < 1:
            raise self.error("num_outputs must be positive")

    def _sizes(self, shape: tuple[int, ...], given: tuple[int, ...] | None) -> tuple[
            int, list[int]]:
        axis = normalize_axis(self, self.axis, len(shape))
        length = shape[axis]
        sizes = given if given is not None and (self.version in (1, 13, 18)) else self.split_attr
        if sizes is not None:
            if sum(sizes) != length or min(sizes, default=0) < 0:
                raise self.error(f"split sizes {list(sizes)} do not add up to {length}")
            return axis, list(sizes)
        count = self.num_outputs_attr or self.num_outputs
        if count is None:
            raise self.error("the number of outputs is unknown; give split sizes")
        if self.num_outputs_attr is not None:
            piece = -(-length // count)
            pieces = [min(piece, max(0, length - i * piece)) for i in range(count)]
            if pieces[-1] == 0:
                raise self.error(f"{length} cannot be split into {count} non-empty pieces")
            return axis, pieces
        if length % count:
            raise self.error(f"axis of size {length} does not split evenly in {count}")
        return axis, [length // count] * count

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        given = known_ints(self, rest[0], "the split input") if rest else None
        axis, sizes = self._sizes(x.shape, given)
        outs = [TensorInfo(x.dtype, (*x.shape[:axis], s, *x.shape[axis + 1:])) for s in sizes]
        return fold(self, inputs, outs)

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        axis, sizes = self._sizes(x.shape, ints_of(rest[0]) if rest else None)
        bounds = np.cumsum(sizes)[:-1]
        return [piece.copy() for piece in np.split(x, bounds, axis=axis)]


OPS = (Split,)
