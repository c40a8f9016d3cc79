"""Lower QAdd (residual connections) to LOAD A, LOAD B, ADD.

A, B and Y have one shape (or B is broadcast, below); each is seen as images of pixels (`feature_map`), possibly with
different strides (halos). Per image and chunk of `dim` channels, blocks of whole image rows
are loaded, A and B into two of four spad_in quarters (double-buffered), and added with one ADD
that writes the block of Y. A B along A's last axis (A [..., H] row-major, B [H], [1, H] ...:
LayerNorm's beta) is loaded as one row per chunk of `dim` lanes and read for every row of the
block (`b_broadcast`); so is a per-channel B (A [N, C, *spatial] channel-last, B [N or 1, C,
1, ...]: a batch norm's shift), one row per channel chunk read for every pixel, as QMul's; a
per-channel B of a rank-3 A stored row-major is one value per row of A (`row_column`, as QMul's).
"""

import numpy as np

from systolic.errors import ResourceError
from systolic.ir import DataType, Node
from systolic.isa.field_copies import copy_with
from systolic.isa.instructions import Add, Instruction
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.feature_map import check_same_layout, feature_map, load_pixels
from systolic.mapper.lowering.multiply import (
    broadcast_form,
    broadcast_row,
    check_lanes_are_channels,
    check_lanes_are_last_axis,
    row_column,
    rows_are_channels,
)
from systolic.mapper.lowering.node_attrs import int_attr
from systolic.mapper.lowering.row_fold import fold_long_rows
from systolic.mapper.lowering.vector_tiles import SpadWindow, vector_tiles

__all__ = ["lower_add"]

_FLIP = 128


def lower_add(node: Node, ctx: LayerContext, window: SpadWindow | None = None,
              band: int | None = None) -> list[Instruction]:
    """Return the instructions of a systolic.QAdd node, its operands staged in the quarters
    of `window` (default all of spad_in), its blocks in `vector_tiles` order (bands of `band`
    output rows)."""
    window = window or SpadWindow.whole(ctx.config)
    a_name, b_name = node.inputs[0], node.inputs[1]
    y_name = node.outputs[0]
    shape = ctx.shape(y_name)
    types = [ctx.dtype(n) for n in (a_name, b_name, y_name)]
    flips = [_FLIP if t == DataType.UINT8 else 0 for t in types]
    b_shape = ctx.shape(b_name)
    form = broadcast_form(ctx.shape(a_name), b_shape, "QAdd")
    if form == "channel" and rows_are_channels(ctx, (a_name, y_name), shape):
        form = "row"
    elif form == "channel":
        check_lanes_are_channels(node, ctx, (a_name, y_name))
    elif form == "last":
        check_lanes_are_last_axis(node, ctx, (a_name, y_name))
    a_map, b_map, y_map = (
        None if form is not None and n == b_name
        else feature_map(ctx.placement(n), ctx.plan.channel_last(n, t, shape))
        for n, t in zip((a_name, b_name, y_name), types, strict=True)
    )
    assert a_map is not None and y_map is not None
    maps = {a_name: a_map, y_name: y_map, **({b_name: b_map} if b_map is not None else {})}
    check_same_layout(f"QAdd {node.label!r}", maps)
    info = np.iinfo(types[2].numpy)
    quarter = window.rows // 4
    block = min(y_map.height, quarter // y_map.width)
    if block == 0 and (b_map is not None or form == "channel") and (
            folded := fold_long_rows([a_map, y_map] + ([b_map] if b_map else []), quarter)):
        a_map, y_map, *rest = folded  # rows longer than a quarter: the same pixels, shorter
        b_map = rest[0] if rest else None  # rows (a per-channel B is one row for every pixel)
        block = min(y_map.height, quarter // y_map.width)
    if block == 0:
        raise ResourceError(
            f"QAdd {node.label!r}: an image row of {y_map.width} pixels does not fit a quarter "
            f"of its spad_in window ({quarter} rows); raise spad_kib"
        )
    adder = _adder(node, flips, info, b_broadcast=b_map is None and form != "row")
    code: list[Instruction] = []
    tiles = vector_tiles(len(y_map.image_addresses), y_map.channels, y_map.height,
                         ctx.config.dim, block, band)  # fmt: skip
    for t in tiles:
        a_row = window.first + t.buffer * 2 * quarter
        b_row = a_row + quarter
        code.append(load_pixels(a_map, t.image, t.y0, t.rows, t.c0, t.lanes, a_row,
                                flip_sign=bool(flips[0])))  # fmt: skip
        b_image = t.image if form in ("channel", "row") and b_shape[0] > 1 else 0
        if form == "row":
            code.append(row_column(ctx.placement(b_name), b_image, t.y0, t.rows, t.lanes,
                                   b_row, bool(flips[1])))  # fmt: skip
        elif b_map is None:
            assert form is not None
            code.append(broadcast_row(ctx.placement(b_name), form, b_image, t.c0, t.lanes,
                                      b_row, bool(flips[1])))  # fmt: skip
        else:
            code.append(load_pixels(b_map, t.image, t.y0, t.rows, t.c0, t.lanes, b_row,
                                    flip_sign=bool(flips[1])))  # fmt: skip
        code.append(copy_with(
            adder, a_row=a_row, b_row=b_row, m=t.rows * y_map.width, lanes=t.lanes,
            ext=y_map.pixel(t.image, t.y0, 0, t.c0), n0=y_map.width,
            row_stride0=y_map.pixel_stride if y_map.width > 1 else 0,
            row_stride1=y_map.row_stride if t.rows > 1 else 0))
    return code


def _adder(node: Node, flips: list[int], info: np.iinfo, *, b_broadcast: bool) -> Add:
    """The ADD of `node` with its placement fields (rows, lanes, ext, row pattern) left as
    placeholders: each block's ADD is a copy with those set (`copy_with`)."""
    return Add(
        a_row=0, b_row=0, m=1, lanes=1,
        multiplier_a=int_attr(node, "multiplier_a"),
        multiplier_b=int_attr(node, "multiplier_b"),
        shift=int_attr(node, "shift"),
        zp_a=int_attr(node, "a_zero_point", 0) - flips[0],
        zp_b=int_attr(node, "b_zero_point", 0) - flips[1],
        zp_out=int_attr(node, "y_zero_point", 0) - flips[2],
        lo=int_attr(node, "y_lo", int(info.min)) - flips[2],
        hi=int_attr(node, "y_hi", int(info.max)) - flips[2],
        ext=0,
        flip_sign=bool(flips[2]),
        b_broadcast=b_broadcast,
    )  # fmt: skip
