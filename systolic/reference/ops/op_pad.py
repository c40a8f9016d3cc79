"""Pad: pad (or, with negative pads, crop) the edges of a tensor."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import (
    float_attr,
    fold,
    ints_attr,
    ints_of,
    known_ints,
    normalize_axis,
    str_attr,
)
from systolic.reference.ops.base import Op, TensorInfo

_NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


class Pad(Op):
    """Pad-1 (`paddings` attribute), -2 (`pads` attribute, `value`), -11, -13 (pads and
    constant_value are inputs), -18 (axes input), -19 (mode "wrap"), -21, -23.

    pads list all begins then all ends; a negative pad removes cells. Modes: constant
    (value, default 0), reflect (mirror without repeating the edge), edge (repeat the edge),
    wrap (from 19: continue from the other side)."""

    op_type = "Pad"
    since_versions = (1, 2, 11, 13, 18, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.mode = str_attr(self, "mode", "constant")
        modes = ["constant", "reflect", "edge"] + (["wrap"] if version >= 19 else [])
        if self.mode not in modes:
            raise self.error(f"mode {self.mode!r} is not one of {', '.join(modes)}")
        self.pads_attr: tuple[int, ...] | None = None
        if version < 11:
            name = "paddings" if version < 2 else "pads"
            self.pads_attr = ints_attr(self, name)
            if self.pads_attr is None:
                raise self.error(f"required attribute {name!r} is missing")
            self.value = float_attr(self, "value", 0.0)

    def _widths(
        self, rank: int, pads: tuple[int, ...] | None, axes: tuple[int, ...] | None
    ) -> list[tuple[int, int]]:
        if self.version < 11:
            pads = self.pads_attr
        assert pads is not None
        chosen = list(range(rank)) if axes is None else [
            normalize_axis(self, a, rank, "axis in axes") for a in axes]
        if len(pads) != 2 * len(chosen):
            raise self.error(f"pads has {len(pads)} values; it needs {2 * len(chosen)}")
        widths = [(0, 0)] * rank
        for i, axis in enumerate(chosen):
            widths[axis] = (pads[i], pads[len(chosen) + i])
        return widths

    def _shape(self, shape: tuple[int, ...], widths: list[tuple[int, int]]) -> tuple[int, ...]:
        out = tuple(d + b + e for d, (b, e) in zip(shape, widths, strict=True))
        if min(out, default=1) < 0:
            raise self.error(f"pads crop more than the input {list(shape)} holds")
        return out

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        pads = axes = None
        if self.version >= 11:
            pads = known_ints(self, rest[0] if rest else None, "the pads input")
            if pads is None:
                raise self.error("input 'pads' is required")
            if len(rest) > 2:
                axes = known_ints(self, rest[2], "the axes input")
        widths = self._widths(len(x.shape), pads, axes)
        return fold(self, inputs, [TensorInfo(x.dtype, self._shape(x.shape, widths))])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        pads = ints_of(rest[0]) if self.version >= 11 and rest else None
        axes = ints_of(rest[2]) if self.version >= 18 and len(rest) > 2 else None
        widths = self._widths(x.ndim, pads, axes)
        self._shape(x.shape, widths)
        crop = tuple(slice(max(0, -b), d - max(0, -e)) for d, (b, e) in zip(x.shape, widths,
                                                                           strict=True))
        x = x[crop]
        grow = [(max(0, b), max(0, e)) for b, e in widths]
        if self.mode == "constant":
            if self.version < 11:
                value = np.asarray(self.value).astype(x.dtype)
            elif len(rest) > 1 and rest[1] is not None and rest[1].size:
                value = rest[1].reshape(-1)[0]
            else:
                value = np.zeros((), x.dtype)
            return [np.pad(x, grow, mode="constant", constant_values=value)]
        if x.size == 0 and any(b or e for b, e in grow):
            raise self.error(f"mode {self.mode!r} cannot pad an empty tensor")
        return [np.pad(x, grow, mode=_NUMPY_MODES[self.mode])]  # type: ignore[call-overload]


OPS = (Pad,)
