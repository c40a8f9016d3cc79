"""The geometry of a `systolic.QConv`/`QConvInt` seen in 2-D, read from the node and checked.

A 1-D convolution is lowered as a 2-D one of height 1: its spatial axis becomes the width, a
height axis of size 1 (stride 0 bytes) is inserted, and its attributes gain a leading 1 (or 0
for pads and halo). Everything else in the lowering sees only the 2-D form.
"""

import dataclasses

import numpy as np

from systolic.errors import ModelError, UnsupportedError
from systolic.ir import Node
from systolic.isa.program import TensorPlacement
from systolic.mapper.lowering.node_attrs import int_attr, ints_attr

__all__ = ["ConvGeometry", "check_channel_contiguous", "check_halo", "conv_geometry"]


@dataclasses.dataclass(frozen=True)
class ConvGeometry:
    """A convolution in 2-D: NCHW shapes, byte strides, kernel and ONNX attributes.

    `pads` and `halo` are in ONNX pads order (top, left, bottom, right), in elements;
    `x_strides`/`y_strides` are (batch, channel, row, column) in bytes.
    """

    group: int
    x_shape: tuple[int, ...]
    x_strides: tuple[int, ...]
    y_strides: tuple[int, ...]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[int, ...]
    halo: tuple[int, ...]
    out_h: int
    out_w: int


def conv_geometry(
    node: Node, x: TensorPlacement, y: TensorPlacement, w: np.ndarray, x_halo: tuple[int, ...]
) -> tuple[ConvGeometry, np.ndarray]:
    """Return the 2-D geometry of QConv `node` (X at `x`, Y at `y`, weights `w`, X's halo
    `x_halo` or () for none) and W with 4 axes (O, C/group, kh, kw).

    Raises UnsupportedError for other than 1-D or 2-D, ModelError for attributes, halo, channel
    counts or Y's shape that do not fit (in that order of checking).
    """
    label = node.label
    rank = len(x.shape) - 2
    if rank not in (1, 2) or w.ndim != rank + 2 or len(y.shape) != rank + 2:
        raise UnsupportedError(
            f"layer {label!r}: only 1-D and 2-D convolutions run on the array "
            f"(X {list(x.shape)}, W {list(w.shape)})"
        )
    group = int_attr(node, "group", 1)
    strides, dilations, pads, halo = _spatial_attrs(node, rank, x_halo)
    x_strides, y_strides, x_shape, y_shape = x.strides, y.strides, x.shape, y.shape
    if rank == 1:
        strides, dilations = (1, *strides), (1, *dilations)
        pads, halo = (0, pads[0], 0, pads[1]), (0, halo[0], 0, halo[1])
        x_strides, y_strides = _lift_1d(x_strides), _lift_1d(y_strides)
        x_shape, y_shape = _lift_1d(x_shape, 1), _lift_1d(y_shape, 1)
        w = w[:, :, None, :]
    _check_groups(label, x_shape[1], w, group)
    (sh, sw), (dh, dw) = strides, dilations
    kh, kw = w.shape[2:]
    out_h = (x_shape[2] + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    out_w = (x_shape[3] + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    expected = (x_shape[0], w.shape[0], out_h, out_w)
    if y_shape != expected:
        raise ModelError(f"node {label!r}: Y is placed as {list(y.shape)}, the convolution "
                         f"gives {list(expected)}")  # fmt: skip
    geometry = ConvGeometry(group, x_shape, x_strides, y_strides, (kh, kw), (sh, sw), (dh, dw),
                            pads, halo, out_h, out_w)  # fmt: skip
    return geometry, w


def _spatial_attrs(
    node: Node, rank: int, x_halo: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Return (strides, dilations, pads, halo) of a `rank`-D convolution, checked for length."""
    strides = ints_attr(node, "strides", (1,) * rank)
    dilations = ints_attr(node, "dilations", (1,) * rank)
    pads = ints_attr(node, "pads", (0,) * (2 * rank))
    halo = x_halo or (0,) * (2 * rank)
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        raise ModelError(f"node {node.label!r}: strides, dilations and pads do not fit a "
                         f"{rank}-D convolution")  # fmt: skip
    if len(halo) != 2 * rank:
        raise ModelError(f"layer {node.label!r}: x_halo needs {2 * rank} values, not {halo}")
    return strides, dilations, pads, halo


def _lift_1d(values: tuple[int, ...], height: int = 0) -> tuple[int, ...]:
    """Return (N, C, W) strides or shape as (N, C, H, W), with `height` for the new H axis."""
    return (values[0], values[1], height, values[2])


def _check_groups(label: str, channels: int, w: np.ndarray, group: int) -> None:
    """Raise ModelError unless X's `channels` and W's shape fit `group` groups."""
    out_channels, c_group = w.shape[:2]
    if channels != c_group * group or out_channels % group:
        raise ModelError(f"node {label!r}: X has {channels} channels, W is {list(w.shape)} "
                         f"with group {group}")  # fmt: skip


def check_channel_contiguous(
    label: str, name: str, placement: TensorPlacement, stride: int, size: int
) -> None:
    """Raise UnsupportedError unless tensor `name`'s channel `stride` equals its element `size`
    (bytes), or it has one channel."""
    if stride != size and placement.shape[1] > 1:
        raise UnsupportedError(
            f"layer {label!r}: {name} ({placement.name!r}) must be channel-contiguous "
            f"(channel stride {size} bytes), not {stride}"
        )


def check_halo(label: str, geometry: ConvGeometry) -> None:
    """Raise UnsupportedError when the convolution reads X beyond its halo on any side."""
    g = geometry
    (kh, kw), (sh, sw), (dh, dw), pads = g.kernel, g.stride, g.dilation, g.pads
    height, width = g.x_shape[2:]
    reach = ((g.out_h - 1) * sh + (kh - 1) * dh - pads[0] - (height - 1),
             (g.out_w - 1) * sw + (kw - 1) * dw - pads[1] - (width - 1))  # fmt: skip
    halo = g.halo
    if pads[0] > halo[0] or pads[1] > halo[1] or reach[0] > halo[2] or reach[1] > halo[3]:
        raise UnsupportedError(
            f"layer {label!r}: the convolution reads {pads[:2]} before and "
            f"{(max(reach[0], 0), max(reach[1], 0))} after X's spatial extent, beyond its "
            f"halo {halo}; place X with a larger halo"
        )
