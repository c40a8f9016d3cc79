"""GridSample: sample an input at the normalized positions of a grid (spatial transformers,
deformable and flow-warping layers)."""

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold, int_attr, str_attr
from systolic.reference.ops.base import Op, TensorInfo

_MODES = {16: ("bilinear", "nearest", "bicubic"), 20: ("linear", "nearest", "cubic")}
_CANONICAL = {"bilinear": "linear", "bicubic": "cubic"}
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75


def reflect(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """Return `x` reflected by the nearer border until it lies in [low, high]."""
    span = high - low
    if span <= 0:
        return np.full_like(x, low)
    below, above = low - x, x - high
    out = x.copy()
    for distance, start, end, mask in ((below, low, high, x < low), (above, high, low, x > high)):
        folds = np.floor(distance / span)
        rest = distance - folds * span
        sign = 1.0 if start == low else -1.0
        even = start + sign * rest
        odd = end - sign * rest
        out = np.where(mask, np.where(folds % 2 == 0, even, odd), out)
    return out


def cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Return Keys' cubic convolution weights (a = -0.75) of taps -1, 0, 1, 2 at offset t."""
    a = _CUBIC_A

    def far(d: np.ndarray) -> np.ndarray:
        return np.asarray(((a * d - 5 * a) * d + 8 * a) * d - 4 * a)

    def near(d: np.ndarray) -> np.ndarray:
        return np.asarray(((a + 2) * d - (a + 3)) * d * d + 1)

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


class GridSample(Op):
    """GridSample-16 (4-D X, `mode` bilinear/nearest/bicubic), -20 (N-D, modes
    linear/nearest/cubic), -22 (more types). X is (N, C, D1..Dk), grid (N, H1..Hk, k) with
    the last axis's coordinates in reverse axis order (x then y ...), normalized to [-1, 1]
    (pixel centers with `align_corners`=1, else pixel edges). Positions outside take
    `padding_mode`: zeros, border (clamped) or reflection (mirrored at the borders).
    Output (N, C, H1..Hk); computed in float64 and rounded once, as onnx's reference
    computes the taps (nearest rounds halves to even)."""

    op_type = "GridSample"
    since_versions = (16, 20, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        modes = _MODES[16 if version < 20 else 20]
        mode = str_attr(self, "mode", modes[0])
        self.padding = str_attr(self, "padding_mode", "zeros")
        if mode not in modes or self.padding not in _PADDINGS:
            raise self.error(f"mode {mode!r} must be one of {', '.join(modes)} and "
                             f"padding_mode {self.padding!r} one of {', '.join(_PADDINGS)}")
        self.mode = _CANONICAL.get(mode, mode)
        self.align = int_attr(self, "align_corners", 0) != 0

    def _shape(self, x: tuple[int, ...], grid: tuple[int, ...]) -> tuple[int, ...]:
        k = len(x) - 2
        if k < 1 or (self.version < 20 and k != 2) or grid != (x[0], *grid[1:-1], k) or (
                len(grid) != k + 2):
            raise self.error(f"X {list(x)} and grid {list(grid)} must be (N, C, D1..Dk) and "
                             f"(N, H1..Hk, k){' with k = 2' if self.version < 20 else ''}")
        return (x[0], x[1], *grid[1:-1])

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, grid = inputs
        assert x is not None and grid is not None
        check_type(self, x, FLOAT_TYPES, "X")
        check_type(self, grid, FLOAT_TYPES, "grid")
        return fold(self, inputs, [TensorInfo(x.dtype, self._shape(x.shape, grid.shape))])

    def _taps(self, position: np.ndarray, size: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Return (index, weight) pairs of one spatial axis of `size` at `position`."""
        low, high = (0.0, size - 1.0) if self.align else (-0.5, size - 0.5)
        c = (position + 1) / 2 * (size - 1) if self.align else ((position + 1) * size - 1) / 2
        if self.mode == "nearest":
            c = np.rint(c)
        outside = (c < low) | (c > high)
        if self.padding == "border":
            c = np.where(outside, np.clip(c, 0, size - 1), c)
        elif self.padding == "reflection":
            c = np.where(outside, reflect(c, low, high), c)
        if self.mode == "nearest":
            return [(c.astype(np.int64), np.ones_like(c))]
        base = np.floor(c)
        t = c - base
        offsets = (0, 1) if self.mode == "linear" else (-1, 0, 1, 2)
        weights = [1 - t, t] if self.mode == "linear" else cubic_weights(t)
        return [(base.astype(np.int64) + o, w) for o, w in zip(offsets, weights, strict=True)]

    def _fetch(self, index: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (index to read, 1 where the read counts) for integer taps `index`."""
        if self.padding == "border":
            return np.clip(index, 0, size - 1), np.ones(index.shape)
        if self.padding == "reflection":
            low, high = (0.0, size - 1.0) if self.align else (-0.5, size - 0.5)
            return reflect(index.astype(np.float64), low, high).astype(np.int64), np.ones(
                index.shape)
        inside = (index >= 0) & (index < size)
        return np.clip(index, 0, size - 1), inside.astype(np.float64)

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, grid = inputs
        assert x is not None and grid is not None
        shape = self._shape(x.shape, grid.shape)
        sizes = x.shape[2:]
        k = len(sizes)
        taps = [self._taps(grid[..., k - 1 - axis].astype(np.float64), size)
                for axis, size in enumerate(sizes)]
        batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * k)
        total: np.ndarray = np.zeros((*shape[:1], *shape[2:], x.shape[1]))
        data = x.astype(np.float64)
        for combo in itertools.product(*taps):
            weight, where = np.ones(grid.shape[:-1]), []
            for (index, w), size in zip(combo, sizes, strict=True):
                read, counts = self._fetch(index, size)
                weight = weight * w * counts
                where.append(read)
            picks: tuple[Any, ...] = (batch, slice(None), *where)
            total = total + data[picks] * weight[..., None]
        return [np.moveaxis(total, -1, 1).astype(x.dtype)]


OPS = (GridSample,)
