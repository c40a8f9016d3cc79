"""Lower QMaxPool and QAveragePool (global pooling included) to LOAD + POOL.

Per image and per chunk of `dim` channels, the output rows are cut into tiles whose input
rows (every pixel of each, one spad_in row per pixel) fit half of spad_in; tiles alternate
between the two halves so the LOAD of the next tile overlaps the POOLs of this one. POOL takes
one multiplier for all its outputs, so average pooling issues one POOL per rectangle of outputs
whose windows hold the same number of cells (count_include_pad = 0 borders, ceil-mode
overshoot); max pooling and interior outputs take one POOL per tile.
"""

import numpy as np

from systolic.errors import ResourceError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.instructions import Instruction, Pool, PoolMode
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.feature_map import feature_map, load_pixels
from systolic.mapper.lowering.node_attrs import int_attr, ints_attr
from systolic.mapper.lowering.vector_tiles import SpadWindow, vector_tiles
from systolic.reference.kernels.pool import window_counts
from systolic.reference.ops.op_systolic_qaveragepool import QAveragePool

__all__ = ["count_rectangles", "lower_pool"]

_FLIP = 128


def count_rectangles(counts: np.ndarray) -> list[tuple[int, int, int, int, int]]:
    """Cut a 2-D array of window counts into rectangles of equal count.

    Returns (y0, y1, x0, x1, count) tuples covering every position once: each row is split
    into runs of equal count and consecutive rows with the same runs are merged.
    """
    rows: list[tuple[tuple[int, int, int], ...]] = []
    for row in counts:
        runs = []
        start = 0
        for x in range(1, len(row) + 1):
            if x == len(row) or row[x] != row[start]:
                runs.append((start, x, int(row[start])))
                start = x
        rows.append(tuple(runs))
    rectangles = []
    y0 = 0
    for y in range(1, len(rows) + 1):
        if y == len(rows) or rows[y] != rows[y0]:
            rectangles += [(y0, y, x0, x1, c) for x0, x1, c in rows[y0]]
            y0 = y
    return rectangles


def lower_pool(node: Node, ctx: LayerContext, window: SpadWindow | None = None,
               band: int | None = None) -> list[Instruction]:
    """Return the instructions of a systolic.QMaxPool or systolic.QAveragePool node, its input
    rows staged in the halves of `window` (default all of spad_in), its tiles in
    `vector_tiles` order (bands of `band` output rows)."""
    window = window or SpadWindow.whole(ctx.config)
    x_name, y_name = node.inputs[0], node.outputs[0]
    x_shape = ctx.shape(x_name)
    if len(x_shape) not in (3, 4):
        raise UnsupportedError(f"{node.op_type} {node.label!r} needs a 1-D or 2-D input")
    kernel = ints_attr(node, "kernel_shape", ())
    rank = len(kernel)
    strides = ints_attr(node, "strides", (1,) * rank)
    pads = ints_attr(node, "pads", (0,) * 2 * rank)
    if rank == 1:  # a 1-D pool is a 2-D one of height 1
        kernel, strides, pads = (1, *kernel), (1, *strides), (0, pads[0], 0, pads[1])
    kh, kw = kernel
    sh, sw = strides
    pt, pl = pads[0], pads[1]
    x_type, y_type = ctx.dtype(x_name), ctx.dtype(y_name)
    x_flip = _FLIP if x_type == DataType.UINT8 else 0
    y_flip = _FLIP if y_type == DataType.UINT8 else 0
    info = np.iinfo(y_type.numpy)
    lo = int_attr(node, "y_lo", int(info.min)) - y_flip
    hi = int_attr(node, "y_hi", int(info.max)) - y_flip
    src = feature_map(ctx.placement(x_name), True)
    dst = feature_map(ctx.placement(y_name), True)
    oh, ow = dst.height, dst.width
    average = node.op_type == "QAveragePool"
    if average:
        op = QAveragePool(node.attrs, 1, node.label)
        in_spatial = (src.height, src.width)
        counts = window_counts(in_spatial, kernel, strides, pads, (1, 1), ceil_mode=False,
                               count_pads=op.count_include_pad)  # fmt: skip
        multipliers, shifts = op.multipliers(counts)
        zp_in = int_attr(node, "x_zero_point", 0) - x_flip
        zp_out = int_attr(node, "y_zero_point", 0) - y_flip
    else:
        counts = np.zeros((oh, ow), dtype=np.int64)

    half = window.rows // 2
    tile_out = 0
    while tile_out < oh and ((tile_out * sh) + kh) * src.width <= half:
        tile_out += 1
    if tile_out == 0:
        raise ResourceError(
            f"{node.op_type} {node.label!r}: {kh} input rows of {src.width} pixels do not fit "
            f"half of its spad_in window ({half} rows); raise spad_kib"
        )
    code: list[Instruction] = []
    for t in vector_tiles(len(src.image_addresses), src.channels, oh, ctx.config.dim, tile_out,
                          band):
        oy0, oy1 = t.y0, t.y0 + t.rows
        ty0 = max(0, oy0 * sh - pt)
        ty1 = min(src.height, (oy1 - 1) * sh - pt + kh)
        spad_row = window.first + t.buffer * half
        code.append(load_pixels(src, t.image, ty0, ty1 - ty0, t.c0, t.lanes, spad_row,
                                flip_sign=bool(x_flip)))  # fmt: skip
        for ya, yb, xa, xb, _ in count_rectangles(counts[oy0:oy1]):
            ya, yb = ya + oy0, yb + oy0
            rect = {
                "mode": PoolMode.AVG if average else PoolMode.MAX,
                "in_row": spad_row,
                "lanes": t.lanes,
                "h": ty1 - ty0,
                "w": src.width,
                "kh": kh,
                "kw": kw,
                "sh": sh,
                "sw": sw,
                "pad_top": pt + ty0 - ya * sh,
                "pad_left": pl - xa * sw,
                "oh": yb - ya,
                "ow": xb - xa,
                "lo": lo,
                "hi": hi,
                "ext": dst.pixel(t.image, ya, xa, t.c0),
                "n0": xb - xa,
                "row_stride0": dst.pixel_stride if xb - xa > 1 else 0,
                "row_stride1": dst.row_stride if yb - ya > 1 else 0,
                "flip_sign": bool(y_flip),
            }
            if average:
                rect["multiplier"] = int(multipliers[ya, xa])
                rect["shift"] = int(shifts[ya, xa])
                rect["zp_in"] = zp_in
                rect["zp_out"] = zp_out
            code.append(Pool(**rect))  # type: ignore[arg-type]
    return code
