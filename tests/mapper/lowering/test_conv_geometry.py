"""conv_geometry: a 1-D convolution seen as 2-D, the output size, and the checks' messages."""

import numpy as np
import pytest

from systolic.errors import ModelError, UnsupportedError
from systolic.ir import Attrs, DataType, Node
from systolic.isa.program import TensorPlacement, TensorRole
from systolic.mapper.lowering.conv_geometry import (
    check_channel_contiguous,
    check_halo,
    conv_geometry,
)

I8 = DataType.INT8


def qconv(**attrs: object) -> Node:
    """Return a QConv node named "layer" with `attrs`."""
    return Node("QConv", ("x", "w"), ("y",), domain="systolic", version=1, name="layer",
                attrs=Attrs(attrs))  # type: ignore[arg-type]  # fmt: skip


def place(name: str, shape: tuple[int, ...]) -> TensorPlacement:
    return TensorPlacement.contiguous(name, TensorRole.INPUT, 0, shape, I8)


def test_1d_convolution_becomes_one_row_of_height_1() -> None:
    x, y = place("x", (2, 3, 10)), place("y", (2, 4, 5))
    w = np.zeros((4, 3, 3), np.int8)
    g, w4 = conv_geometry(qconv(strides=(2,), dilations=(1,), pads=(1, 0)), x, y, w, (1, 2))
    assert w4.shape == (4, 3, 1, 3)
    assert (g.x_shape, g.x_strides, g.y_strides) == ((2, 3, 1, 10), (30, 10, 0, 1), (20, 5, 0, 1))
    assert (g.kernel, g.stride, g.pads, g.halo) == ((1, 3), (1, 2), (0, 1, 0, 0), (0, 1, 0, 2))
    assert (g.out_h, g.out_w) == (1, 5)


def test_2d_output_size_follows_stride_dilation_and_pads() -> None:
    x, y = place("x", (1, 2, 9, 8)), place("y", (1, 6, 2, 8))
    w = np.zeros((6, 1, 3, 3), np.int8)
    node = qconv(group=2, strides=(3, 1), dilations=(2, 1), pads=(1, 1, 0, 1))
    g, _ = conv_geometry(node, x, y, w, ())
    assert (g.group, g.out_h, g.out_w, g.halo) == (2, 2, 8, (0, 0, 0, 0))


def test_wrong_output_shape_names_both_shapes() -> None:
    x, y = place("x", (1, 2, 5, 5)), place("y", (1, 2, 5, 5))
    with pytest.raises(ModelError, match=r"^node 'layer': Y is placed as \[1, 2, 5, 5\], the "
                       r"convolution gives \[1, 2, 3, 3\]$"):  # fmt: skip
        conv_geometry(qconv(), x, y, np.zeros((2, 2, 3, 3), np.int8), ())


def test_three_dimensional_convolution_is_unsupported() -> None:
    x, y = place("x", (1, 1, 4, 4, 4)), place("y", (1, 1, 4, 4, 4))
    with pytest.raises(UnsupportedError, match=r"^layer 'layer': only 1-D and 2-D "):
        conv_geometry(qconv(), x, y, np.zeros((1, 1, 1, 1, 1), np.int8), ())


def test_halo_and_channel_checks() -> None:
    x, y = place("x", (1, 1, 5, 5)), place("y", (1, 1, 5, 5))
    g, _ = conv_geometry(qconv(pads=(1, 1, 1, 1)), x, y, np.zeros((1, 1, 3, 3), np.int8),
                         (1, 1, 0, 1))  # fmt: skip
    with pytest.raises(UnsupportedError, match=r"reads \(1, 1\) before and \(1, 1\) after X's "
                       r"spatial extent, beyond its halo \(1, 1, 0, 1\); place X"):  # fmt: skip
        check_halo("layer", g)
    check_channel_contiguous("layer", "X", x, 25, 1)  # one channel: any stride
    with pytest.raises(UnsupportedError, match=r"^layer 'layer': Y \('y'\) must be channel-"
                       r"contiguous \(channel stride 1 bytes\), not 16$"):  # fmt: skip
        check_channel_contiguous("layer", "Y", place("y", (1, 2, 4, 4)), 16, 1)
