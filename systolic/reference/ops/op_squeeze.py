"""Squeeze and Unsqueeze: remove or insert dimensions of size 1."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import fold, ints_attr, ints_of, known_ints, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class _AxesOp(Op):
    """Axes come from the `axes` attribute before version 13, from input 2 from 13."""

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axes_attr = ints_attr(self, "axes") if version < 13 else None
        if version >= 13 and "axes" in attrs:
            raise self.error("from version 13 axes is an input, not an attribute")

    def axes_from(self, rest: Sequence[tuple[int, ...] | None]) -> tuple[int, ...] | None:
        return self.axes_attr if self.version < 13 else (rest[0] if rest else None)

    def shape(self, shape: tuple[int, ...], axes: tuple[int, ...] | None) -> tuple[int, ...]:
        raise NotImplementedError

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        given = [known_ints(self, r, "the axes input") for r in rest]
        shape = self.shape(x.shape, self.axes_from(given))
        return fold(self, inputs, [TensorInfo(x.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        shape = self.shape(x.shape, self.axes_from([ints_of(r) for r in rest]))
        return [x.reshape(shape)]


class Squeeze(_AxesOp):
    """Squeeze-1, -11 (negative axes), -13 (axes input), -21, -23. Without axes, every
    dimension of size 1 goes; a listed axis whose size is not 1 is a ModelError."""

    op_type = "Squeeze"
    since_versions = (1, 11, 13, 21, 23)

    def shape(self, shape: tuple[int, ...], axes: tuple[int, ...] | None) -> tuple[int, ...]:
        if axes is None:
            return tuple(d for d in shape if d != 1)
        chosen = {normalize_axis(self, a, len(shape)) for a in axes}
        for a in chosen:
            if shape[a] != 1:
                raise self.error(f"cannot squeeze axis {a} of size {shape[a]} in {list(shape)}")
        return tuple(d for i, d in enumerate(shape) if i not in chosen)


class Unsqueeze(_AxesOp):
    """Unsqueeze-1, -11 (negative axes), -13 (axes input), -21, -23. Axes index the output."""

    op_type = "Unsqueeze"
    since_versions = (1, 11, 13, 21, 23)

    def shape(self, shape: tuple[int, ...], axes: tuple[int, ...] | None) -> tuple[int, ...]:
        if axes is None:
            raise self.error("axes are required")
        rank = len(shape) + len(axes)
        chosen = {normalize_axis(self, a, rank) for a in axes}
        if len(chosen) != len(axes):
            raise self.error(f"axes {list(axes)} repeat an axis")
        dims = iter(shape)
        return tuple(1 if i in chosen else next(dims) for i in range(rank))


OPS = (Squeeze, Unsqueeze)
