"""Lower `systolic.QConv` (1-D and 2-D, any stride, padding, dilation and group count), and
`systolic.QConvInt` the same way with STORE.raw (int32 pixels of channels, channel-last; no
zero point folded: the array computes Σ (Xpad − z0)·W itself, z0 = 128 for uint8 X).

im2col is address generation: row p of A is output pixel p, gathered by one LOAD row pattern
(n0 = output width, row_stride0 = stride_w · x_stride_w, row_stride1 = stride_h · x_stride_h)
and the element pattern with K ordered (kernel row, kernel column, channel): run = the packed
channel count, n_mid = kernel width, stride_mid = dilation_w · x_stride_w, stride_outer =
dilation_h · x_stride_h. Padding reads the halo around X (filled with the input zero point by
its producer). The weights are re-laid-out at compile time to that K order.

Groups are lowered `pack` at a time as one dense product whose weights are block-diagonal
(the packed groups' channels are adjacent in memory, so the same element pattern walks them):
a depthwise convolution thus fills `cols` columns with `cols` channels instead of one. The pack
size minimises the estimated array time; the useful MACs in `LayerStats` exclude the zeros.
"""

from collections.abc import Mapping

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ModelError, UnsupportedError
from systolic.ir import Node
from systolic.isa.program import TensorPlacement
from systolic.isa.store import RAW_BYTES
from systolic.mapper.lowering.gemm import ElementWalk, GemmJob, RowBlock
from systolic.mapper.lowering.jobs import lower_jobs
from systolic.mapper.lowering.layer_code import ConstantAllocator, LayerCode
from systolic.mapper.lowering.node_attrs import (
    OutputSide,
    constant_input,
    input_side,
    int_attr,
    ints_attr,
    output_side,
    per_channel,
)
from systolic.mapper.lowering.params_rows import fold_zero_point
from systolic.mapper.lowering.table import Activation

__all__ = ["choose_pack", "lower_qconv"]


def choose_pack(group: int, k_group: int, m_group: int, pixels: int, config: ArrayConfig) -> int:
    """Return how many groups to lower together (block-diagonal), minimising array time."""
    rows, cols = config.rows, config.cols
    best: tuple[float, int] | None = None
    for pack in range(1, group + 1):
        if pack > 1 and pack * m_group > cols:
            break
        packs = -(-group // pack)
        k, n = pack * k_group, pack * m_group
        if config.dataflow is Dataflow.WS:
            cycles = packs * -(-k // rows) * -(-n // cols) * max(pixels, rows)
        else:
            cycles = packs * -(-n // cols) * max(k, rows) * -(-pixels // rows)
        if best is None or (cycles, -pack) < (best[0], -best[1]):
            best = (cycles, pack)
    assert best is not None
    return best[1]


def lower_qconv(
    node: Node,
    x: TensorPlacement,
    y: TensorPlacement,
    x_halo: tuple[int, ...],
    config: ArrayConfig,
    alloc: ConstantAllocator,
    *,
    constants: Mapping[str, np.ndarray],
    activation: Activation | None = None,
) -> LayerCode:
    """Return the code computing QConv `node` from X at `x` into Y at `y`.

    `x_halo` is the halo around X in elements, ONNX pads order (begin of each spatial axis,
    then ends; () for none); it must cover the node's pads. `constants` maps initializer names
    to arrays (W and the optional B). X must be channel-contiguous (stride of C equal to
    `operand_bytes`), and so must Y. With `activation` (a fused QTable), the STOREs write Y
    through its table (`y` then is the QTable's output placement, with the QConv's output type).
    """
    label = node.label
    w = constant_input(constants, node.inputs[1], node)
    if w.dtype.kind not in "iu":  # (integer weights keep their type: B is as wide, not int64)
        w = w.astype(np.int64)
    has_bias = len(node.inputs) > 2 and node.inputs[2]
    rank = len(x.shape) - 2
    if rank not in (1, 2) or w.ndim != rank + 2 or len(y.shape) != rank + 2:
        raise UnsupportedError(
            f"layer {label!r}: only 1-D and 2-D convolutions run on the array "
            f"(X {list(x.shape)}, W {list(w.shape)})"
        )
    group = int_attr(node, "group", 1)
    strides = ints_attr(node, "strides", (1,) * rank)
    dilations = ints_attr(node, "dilations", (1,) * rank)
    pads = ints_attr(node, "pads", (0,) * (2 * rank))
    halo = x_halo or (0,) * (2 * rank)
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        raise ModelError(f"node {label!r}: strides, dilations and pads do not fit a "
                         f"{rank}-D convolution")  # fmt: skip
    if len(halo) != 2 * rank:
        raise ModelError(f"layer {label!r}: x_halo needs {2 * rank} values, not {halo}")
    # Work in 2-D: a 1-D convolution has one row of height 1.
    x_strides: tuple[int, ...]
    y_strides: tuple[int, ...]
    x_shape: tuple[int, ...]
    y_shape: tuple[int, ...]
    if rank == 1:
        strides, dilations = (1, *strides), (1, *dilations)
        pads, halo = (0, pads[0], 0, pads[1]), (0, halo[0], 0, halo[1])
        x_strides = (x.strides[0], x.strides[1], 0, x.strides[2])
        y_strides = (y.strides[0], y.strides[1], 0, y.strides[2])
        x_shape = (x.shape[0], x.shape[1], 1, x.shape[2])
        y_shape = (y.shape[0], y.shape[1], 1, y.shape[2])
        w = w[:, :, None, :]
    else:
        x_strides, y_strides = x.strides, y.strides
        x_shape, y_shape = x.shape, y.shape
    batch, channels, height, width = x_shape
    out_channels, c_group, kh, kw = w.shape
    if channels != c_group * group or out_channels % group:
        raise ModelError(f"node {label!r}: X has {channels} channels, W is {list(w.shape)} "
                         f"with group {group}")  # fmt: skip
    (sh, sw), (dh, dw) = strides, dilations
    out_h = (height + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    out_w = (width + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    if y_shape != (batch, out_channels, out_h, out_w):
        raise ModelError(f"node {label!r}: Y is placed as {list(y.shape)}, the convolution "
                         f"gives {[batch, out_channels, out_h, out_w]}")  # fmt: skip
    ob = config.operand_bytes
    raw = node.op_type == "QConvInt"  # int32 results, STORE.raw (integer_conv_side)
    y_ob = RAW_BYTES if raw else ob
    for name, placement, stride, size in (("X", x, x_strides[1], ob), ("Y", y, y_strides[1], y_ob)):
        if stride != size and placement.shape[1] > 1:
            raise UnsupportedError(
                f"layer {label!r}: {name} ({placement.name!r}) must be channel-contiguous "
                f"(channel stride {size} bytes), not {stride}"
            )
    reach = ((out_h - 1) * sh + (kh - 1) * dh - pads[0] - (height - 1),
             (out_w - 1) * sw + (kw - 1) * dw - pads[1] - (width - 1))  # fmt: skip
    if pads[0] > halo[0] or pads[1] > halo[1] or reach[0] > halo[2] or reach[1] > halo[3]:
        raise UnsupportedError(
            f"layer {label!r}: the convolution reads {pads[:2]} before and "
            f"{(max(reach[0], 0), max(reach[1], 0))} after X's spatial extent, beyond its "
            f"halo {halo}; place X with a larger halo"
        )

    x_zp, flip_in = input_side(x, int_attr(node, "x_zero_point", 0), node, config)
    if raw:  # Σ (Xpad − z0)·W as the array computes it: nothing to fold, no output stage
        x_zp, out = 0, OutputSide(0, 0, 0, False)
        multiplier = shift = np.zeros(out_channels, np.int64)
    else:
        out = output_side(node, y, config)
        multiplier = per_channel(node, "multiplier", out_channels)
        shift = per_channel(node, "shift", out_channels)
    if has_bias:
        bias = constant_input(constants, node.inputs[2], node).astype(np.int64).reshape(-1)
    else:
        bias = np.zeros(out_channels, np.int64)
    m_group = out_channels // group
    pixels = batch * out_h * out_w
    pack = choose_pack(group, kh * kw * c_group, m_group, pixels, config)

    walk_stride_w = x_strides[3]
    jobs = []
    for g0 in range(0, group, pack):
        gs = min(pack, group - g0)
        # B[(i, j, gg, c), (gg, mm)] = W[(g0 + gg) * m_group + mm, c, i, j]
        blocks = w[g0 * m_group : (g0 + gs) * m_group].reshape(gs, m_group, c_group, kh, kw)
        b = np.zeros((kh, kw, gs, c_group, gs, m_group), dtype=w.dtype)
        for gg in range(gs):
            b[:, :, gg, :, gg, :] = blocks[gg].transpose(2, 3, 1, 0)
        b = b.reshape(kh * kw * gs * c_group, gs * m_group)
        columns = slice(g0 * m_group, (g0 + gs) * m_group)
        a_rows = tuple(
            RowBlock(
                x.address + n * x_strides[0] - pads[0] * x_strides[2] - pads[1] * walk_stride_w
                + g0 * c_group * ob,
                out_h * out_w, out_w, sw * walk_stride_w, sh * x_strides[2],
            )
            for n in range(batch)
        )  # fmt: skip
        y_rows = tuple(
            RowBlock(y.address + n * y_strides[0] + g0 * m_group * y_ob, out_h * out_w, out_w,
                     y_strides[3], y_strides[2])
            for n in range(batch)
        )  # fmt: skip
        jobs.append(
            GemmJob(
                label=label,
                a_rows=a_rows,
                y_rows=y_rows,
                walk=ElementWalk(gs * c_group, kw, dw * walk_stride_w, dh * x_strides[2]),
                weights=b,
                bias=fold_zero_point(b, bias[columns], x_zp, label),
                multiplier=multiplier[columns],
                shift=shift[columns],
                zero_point=out.zero_point,
                lo=out.lo,
                hi=out.hi,
                flip_in=flip_in,
                flip_out=out.flip,
                raw=raw,
            )
        )
    macs = pixels * out_channels * c_group * kh * kw
    return lower_jobs(jobs, macs, config, alloc, activation)
