"""CenterCropPad: crop or zero-pad chosen axes to given sizes, keeping the center."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import fold, ints_attr, known_ints, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class CenterCropPad(Op):
    """CenterCropPad-18: for each axis of `axes` (default all) and the size given for it in
    `shape` (int32/int64, known before running), a larger axis is cropped from offset
    (dim - size) // 2 and a smaller one zero-padded with its data at offset
    (size - dim) // 2; any element type."""

    op_type = "CenterCropPad"
    since_versions = (18,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axes = ints_attr(self, "axes")

    def _targets(self, shape: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[int, ...]:
        axes = [normalize_axis(self, a, len(shape)) for a in self.axes or range(len(shape))]
        if len(axes) != len(sizes) or len(set(axes)) != len(axes) or min(sizes, default=0) < 0:
            raise self.error(f"shape {list(sizes)} must give one size (not negative) per axis "
                             f"of {axes}")
        out = list(shape)
        for axis, size in zip(axes, sizes, strict=True):
            out[axis] = size
        return tuple(out)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, sizes = inputs
        assert x is not None and sizes is not None
        if sizes.dtype not in (DataType.INT32, DataType.INT64):
            raise self.error(f"shape must be int32 or int64, got {sizes.dtype.short}")
        target = self._targets(x.shape, known_ints(self, sizes, "shape") or ())
        return fold(self, inputs, [TensorInfo(x.dtype, target)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, sizes = inputs
        assert x is not None and sizes is not None
        target = self._targets(x.shape, tuple(int(v) for v in sizes.reshape(-1)))
        source, place = [], []
        for dim, size in zip(x.shape, target, strict=True):
            keep = min(dim, size)
            start_in, start_out = max(dim - size, 0) // 2, max(size - dim, 0) // 2
            source.append(slice(start_in, start_in + keep))
            place.append(slice(start_out, start_out + keep))
        out = np.zeros(target, dtype=x.dtype)
        out[tuple(place)] = x[tuple(source)]
        return [out]


OPS = (CenterCropPad,)
