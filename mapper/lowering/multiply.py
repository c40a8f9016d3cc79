"""Lower systolic.QMul (element-wise quantized product) to LOAD A, LOAD B, ADD with `mul`.

Tiled like QAdd (`add.py`): per image, chunk of `dim` channels and block of image rows, A and
B are loaded into two of four spad_in quarters (double-buffered) and one ADD with `mul`
(multiplier_a = the QMul multiplier, multiplier_b = 0) writes the block of Y. When B is a
per-channel vector (A [N, C, *spatial], B [N or 1, C, 1, ...]) it is loaded as one row per
channel chunk and the ADD reads it for every pixel (`b_broadcast`); A's channels must then be
its scratchpad lanes (a channel-last map, or a matrix [N, C]). When B is a vector along A's last
axis (A [..., H] row-major, B [H], [1, H], [1, 1, H] ...: LayerNorm's gamma) it is loaded as one
row per chunk of `dim` lanes of H and broadcast over A's rows the same way. A per-channel B of
a rank-3 A stored row-major (A [N, S, H] a matrix product's, B [N or 1, S, 1]: T5's RMS norm
x * r) is one value per row of A: it is loaded as a block of rows like A's, each element
repeated over the lanes (`row_column`), and the ADD reads it without `b_broadcast`.
"""

import numpy as np

from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.instructions import Add, Instruction, Load, LoadTarget
from systolic.isa.memories import Memory, depth
from systolic.isa.program import TensorPlacement
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.feature_map import (
    FeatureMap,
    check_same_layout,
    feature_map,
    load_pixels,
)
from systolic.mapper.lowering.node_attrs import int_attr
from systolic.mapper.lowering.row_fold import fold_long_rows
from systolic.mapper.lowering.vector_tiles import VectorTile, vector_tiles
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast, per_channel_broadcast

__all__ = [
    "broadcast_form",
    "broadcast_row",
    "check_lanes_are_channels",
    "check_lanes_are_last_axis",
    "lower_qmul",
    "row_column",
    "rows_are_channels",
]

_FLIP = 128


def broadcast_form(a_shape: tuple[int, ...], b_shape: tuple[int, ...], what: str = "QMul",
                   *, per_channel: bool = True) -> str | None:
    """Return None when B has A's shape, "channel" when B is a per-channel vector of A (B [N or
    1, C, 1, ...] for A [N, C, ...]; only when `per_channel`), "last" when B is a vector along
    A's last axis (B [H], [1, H], [1, 1, H] ... for A [..., H]); ModelError else."""
    if a_shape == b_shape:
        return None
    if per_channel and per_channel_broadcast(a_shape, b_shape):
        return "channel"
    if last_axis_broadcast(a_shape, b_shape):
        return "last"
    raise ModelError(f"{what} B {list(b_shape)} must have A's shape {list(a_shape)}, be per "
                     f"channel ([N or 1, C, 1, ...]) or along the last axis ([1, ..., H])")


def broadcast_row(b: TensorPlacement, form: str, image: int, c0: int, lanes: int, row: int,
                  flip: bool) -> Load:  # fmt: skip
    """LOAD the `lanes` elements of a broadcast B that lane c0 .. c0+lanes-1 of image `image`
    reads (channels of a per-channel B, last-axis elements of a last-axis B) as one spad_in
    row."""
    if form == "channel":
        return _channel_row(b, image, c0, lanes, row, flip)
    element = b.dtype.numpy.itemsize
    stride = b.strides[-1] if b.strides else element
    contiguous = stride == element or lanes == 1
    return Load(
        LoadTarget.SPAD_IN, row, 1, b.address + c0 * stride,
        length=lanes, run=lanes if contiguous else 1, n_mid=1 if contiguous else lanes,
        stride_mid=0 if contiguous else stride, flip_sign=flip,
    )  # fmt: skip


def _channel_row(b: TensorPlacement, image: int, c0: int, lanes: int, row: int,
                 flip: bool) -> Load:  # fmt: skip
    """LOAD channels c0 .. c0+lanes-1 of B's image `image` (B per channel) as one spad_in row."""
    element = b.dtype.numpy.itemsize
    stride = b.strides[1]
    contiguous = stride == element or lanes == 1
    return Load(
        LoadTarget.SPAD_IN, row, 1, b.address + image * b.strides[0] + c0 * stride,
        length=lanes, run=lanes if contiguous else 1, n_mid=1 if contiguous else lanes,
        stride_mid=0 if contiguous else stride, flip_sign=flip,
    )  # fmt: skip


def rows_are_channels(ctx: LayerContext, names: tuple[str, ...], shape: tuple[int, ...]) -> bool:
    """True when a per-channel B ([N or 1, C, 1]) of a rank-3 A stored row-major (every value
    of `names` not channel-last: a matrix product's [N, S, H]) is one value per image row:
    the feature map's rows are A's channels, and B is loaded per row (`row_column`)."""
    return len(shape) == 3 and not any(ctx.plan.channel_last(n, ctx.dtype(n), shape)
                                       for n in names)


def row_column(b: TensorPlacement, image: int, y0: int, rows: int, lanes: int, row: int,
               flip: bool) -> Load:  # fmt: skip
    """LOAD B[image or 0, y0 .. y0+rows-1, 0] of a per-row B into spad_in rows row .., each
    element repeated over `lanes` lanes (`stride_mid` 0): one row of B per row of A."""
    return Load(
        LoadTarget.SPAD_IN, row, rows, b.address + image * b.strides[0] + y0 * b.strides[1],
        row_stride1=b.strides[1] if rows > 1 else 0,
        length=lanes, run=1, n_mid=lanes, stride_mid=0, flip_sign=flip,
    )  # fmt: skip


def check_lanes_are_last_axis(node: Node, ctx: LayerContext, names: tuple[str, ...]) -> None:
    """UnsupportedError unless every value of `names` is stored row-major (its last axis the
    scratchpad lanes), as a last-axis broadcast needs."""
    shape = ctx.shape(node.outputs[0])
    if any(ctx.plan.channel_last(n, ctx.dtype(n), shape) for n in names):
        raise UnsupportedError(f"{node.op_type} {node.label!r}: a B along the last axis needs A "
                               "and Y stored row-major (last axis contiguous)")


def check_lanes_are_channels(node: Node, ctx: LayerContext, names: tuple[str, ...]) -> None:
    """UnsupportedError unless every value of `names` has its channels as the scratchpad lanes
    (a matrix [N, C], or stored channel-last), as a per-channel broadcast needs."""
    shape = ctx.shape(node.outputs[0])
    if len(shape) != 2 and not all(ctx.plan.channel_last(n, ctx.dtype(n), shape) for n in names):
        raise UnsupportedError(f"{node.op_type} {node.label!r}: a per-channel B needs A and Y "
                               "stored with their channels contiguous (channel-last)")


def _add(node: Node, ctx: LayerContext, t: VectorTile, y_map: FeatureMap, rows: tuple[int, int],
         flips: list[int], broadcast: bool) -> Add:  # fmt: skip
    info = np.iinfo(ctx.dtype(node.outputs[0]).numpy)
    return Add(
        a_row=rows[0],
        b_row=rows[1],
        m=t.rows * y_map.width,
        lanes=t.lanes,
        multiplier_a=int_attr(node, "multiplier"),
        multiplier_b=0,
        shift=int_attr(node, "shift"),
        zp_a=int_attr(node, "a_zero_point", 0) - flips[0],
        zp_b=int_attr(node, "b_zero_point", 0) - flips[1],
        zp_out=int_attr(node, "y_zero_point", 0) - flips[2],
        lo=int_attr(node, "y_lo", int(info.min)) - flips[2],
        hi=int_attr(node, "y_hi", int(info.max)) - flips[2],
        ext=y_map.pixel(t.image, t.y0, 0, t.c0),
        n0=y_map.width,
        row_stride0=y_map.pixel_stride if y_map.width > 1 else 0,
        row_stride1=y_map.row_stride if t.rows > 1 else 0,
        flip_sign=bool(flips[2]),
        mul=True,
        b_broadcast=broadcast,
    )


def lower_qmul(node: Node, ctx: LayerContext) -> list[Instruction]:
    """Return the instructions of a systolic.QMul node."""
    a_name, b_name, y_name = node.inputs[0], node.inputs[1], node.outputs[0]
    shape = ctx.shape(y_name)
    b_shape = ctx.shape(b_name)
    form = broadcast_form(ctx.shape(a_name), b_shape)
    types = [ctx.dtype(n) for n in (a_name, b_name, y_name)]
    flips = [_FLIP if t == DataType.UINT8 else 0 for t in types]
    a_map, y_map = (feature_map(ctx.placement(n), ctx.plan.channel_last(n, t, shape))
                    for n, t in ((a_name, types[0]), (y_name, types[2])))  # fmt: skip
    b_map = None
    if form == "channel" and rows_are_channels(ctx, (a_name, y_name), shape):
        form = "row"
    elif form == "channel":
        check_lanes_are_channels(node, ctx, (a_name, y_name))
    elif form == "last":
        check_lanes_are_last_axis(node, ctx, (a_name, y_name))
    else:
        b_map = feature_map(ctx.placement(b_name), ctx.plan.channel_last(b_name, types[1], shape))
    maps = {a_name: a_map, y_name: y_map, **({b_name: b_map} if b_map is not None else {})}
    check_same_layout(f"QMul {node.label!r}", maps)
    quarter = depth(ctx.config, Memory.SPAD_IN) // 4
    block = min(y_map.height, quarter // y_map.width)
    if block == 0 and (b_map is not None or form == "channel") and (
            folded := fold_long_rows([a_map, y_map] + ([b_map] if b_map else []), quarter)):
        a_map, y_map, *rest = folded  # rows longer than a quarter: the same pixels, shorter
        b_map = rest[0] if rest else None  # rows (a per-channel B is one row for every pixel)
        block = min(y_map.height, quarter // y_map.width)
    if block == 0:
        raise ResourceError(
            f"QMul {node.label!r}: an image row of {y_map.width} pixels does not fit a quarter "
            f"of spad_in ({quarter} rows); raise spad_kib"
        )
    b_place = ctx.placement(b_name)
    images = len(y_map.image_addresses)
    code: list[Instruction] = []
    for t in vector_tiles(images, y_map.channels, y_map.height, ctx.config.dim, block):
        a_row = t.buffer * 2 * quarter
        b_row = a_row + quarter
        code.append(load_pixels(a_map, t.image, t.y0, t.rows, t.c0, t.lanes, a_row,
                                flip_sign=bool(flips[0])))  # fmt: skip
        b_image = t.image if form in ("channel", "row") and b_shape[0] > 1 else 0
        if form == "row":
            code.append(row_column(b_place, b_image, t.y0, t.rows, t.lanes, b_row,
                                   bool(flips[1])))  # fmt: skip
        elif b_map is None:
            assert form is not None
            code.append(broadcast_row(b_place, form, b_image, t.c0, t.lanes, b_row,
                                      bool(flips[1])))  # fmt: skip
        else:
            code.append(load_pixels(b_map, t.image, t.y0, t.rows, t.c0, t.lanes, b_row,
                                    flip_sign=bool(flips[1])))  # fmt: skip
        code.append(_add(node, ctx, t, y_map, (a_row, b_row), flips,
                         form not in (None, "row")))  # fmt: skip
    return code
