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

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import Node
from systolic.isa.program import TensorPlacement
from systolic.isa.store import RAW_BYTES
from systolic.mapper.lowering.conv_geometry import (
    ConvGeometry,
    check_channel_contiguous,
    check_halo,
    conv_geometry,
)
from systolic.mapper.lowering.gemm import ElementWalk, GemmJob, RowBlock
from systolic.mapper.lowering.jobs import lower_jobs
from systolic.mapper.lowering.layer_code import ConstantAllocator, LayerCode
from systolic.mapper.lowering.node_attrs import (
    OutputSide,
    constant_input,
    input_side,
    int_attr,
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
    geometry, w = conv_geometry(node, x, y, w, x_halo)
    ob = config.operand_bytes
    raw = node.op_type == "QConvInt"  # int32 results, STORE.raw (integer_conv_side)
    y_ob = RAW_BYTES if raw else ob
    check_channel_contiguous(label, "X", x, geometry.x_strides[1], ob)
    check_channel_contiguous(label, "Y", y, geometry.y_strides[1], y_ob)
    check_halo(label, geometry)
    out_channels, c_group, kh, kw = w.shape
    numbers = _conv_numbers(node, x, y, config, constants, out_channels, raw)
    m_group = out_channels // geometry.group
    pixels = geometry.x_shape[0] * geometry.out_h * geometry.out_w
    pack = choose_pack(geometry.group, kh * kw * c_group, m_group, pixels, config)
    jobs = []
    for g0 in range(0, geometry.group, pack):
        groups = range(g0, min(g0 + pack, geometry.group))
        a_base, y_base = x.address + g0 * c_group * ob, y.address + g0 * m_group * y_ob
        jobs.append(_group_job(label, geometry, w, numbers, groups, a_base, y_base))
    macs = pixels * out_channels * c_group * kh * kw
    return lower_jobs(jobs, macs, config, alloc, activation)


@dataclasses.dataclass(frozen=True)
class _ConvNumbers:
    """The integer arithmetic of one QConv: X's zero point (int8 domain) and LOAD flip, the
    output stage, per output channel the bias, multiplier and shift (int64), and `raw`
    (QConvInt: STORE.raw of the int32 sums)."""

    raw: bool
    x_zero_point: int
    flip_in: bool
    out: OutputSide
    bias: np.ndarray
    multiplier: np.ndarray
    shift: np.ndarray


def _conv_numbers(
    node: Node,
    x: TensorPlacement,
    y: TensorPlacement,
    config: ArrayConfig,
    constants: Mapping[str, np.ndarray],
    out_channels: int,
    raw: bool,
) -> _ConvNumbers:
    """Return the arithmetic of `node` (`out_channels` output channels); with `raw`
    (QConvInt) no zero point and no output stage: Σ (Xpad − z0)·W as the array computes it."""
    x_zp, flip_in = input_side(x, int_attr(node, "x_zero_point", 0), node, config)
    if raw:
        x_zp, out = 0, OutputSide(0, 0, 0, False)
        multiplier = shift = np.zeros(out_channels, np.int64)
    else:
        out = output_side(node, y, config)
        multiplier = per_channel(node, "multiplier", out_channels)
        shift = per_channel(node, "shift", out_channels)
    if len(node.inputs) > 2 and node.inputs[2]:
        bias = constant_input(constants, node.inputs[2], node).astype(np.int64).reshape(-1)
    else:
        bias = np.zeros(out_channels, np.int64)
    return _ConvNumbers(raw, x_zp, flip_in, out, bias, multiplier, shift)


def _group_job(
    label: str,
    geometry: ConvGeometry,
    w: np.ndarray,
    numbers: _ConvNumbers,
    groups: range,
    a_base: int,
    y_base: int,
) -> GemmJob:
    """Return the product computing the adjacent `groups` at once (block-diagonal weights).

    `a_base`/`y_base` are the bytes of the first group's first channel of X's and Y's first
    image (X's before the padding is subtracted); `w` is W with 4 axes.
    """
    g = geometry
    m_group = w.shape[0] // g.group
    b = _packed_weights(w, groups, m_group)
    columns = slice(groups.start * m_group, groups.stop * m_group)
    walk = ElementWalk(len(groups) * w.shape[1], g.kernel[1], g.dilation[1] * g.x_strides[3],
                       g.dilation[0] * g.x_strides[2])  # fmt: skip
    return GemmJob(
        label=label,
        a_rows=_a_rows(a_base, g),
        y_rows=_y_rows(y_base, g),
        walk=walk,
        weights=b,
        bias=fold_zero_point(b, numbers.bias[columns], numbers.x_zero_point, label),
        multiplier=numbers.multiplier[columns],
        shift=numbers.shift[columns],
        zero_point=numbers.out.zero_point,
        lo=numbers.out.lo,
        hi=numbers.out.hi,
        flip_in=numbers.flip_in,
        flip_out=numbers.out.flip,
        raw=numbers.raw,
    )


def _packed_weights(w: np.ndarray, groups: range, m_group: int) -> np.ndarray:
    """Return B for `groups`, K ordered (kernel row, kernel column, group, channel):
    B[(i, j, gg, c), (gg, mm)] = W[(g0 + gg)·m_group + mm, c, i, j], zeros off the diagonal."""
    gs, c_group, kh, kw = len(groups), w.shape[1], w.shape[2], w.shape[3]
    blocks = w[groups.start * m_group : groups.stop * m_group]
    blocks = blocks.reshape(gs, m_group, c_group, kh, kw)
    b = np.zeros((kh, kw, gs, c_group, gs, m_group), dtype=w.dtype)
    for gg in range(gs):
        b[:, :, gg, :, gg, :] = blocks[gg].transpose(2, 3, 1, 0)
    return b.reshape(kh * kw * gs * c_group, gs * m_group)


def _a_rows(base: int, g: ConvGeometry) -> tuple[RowBlock, ...]:
    """Return A's rows, one block per image: row p is output pixel p's top-left tap, stepping
    by the stride along a row and down the rows; `base` is X's first element (no padding)."""
    walk_stride_w = g.x_strides[3]
    top_left = base - g.pads[0] * g.x_strides[2] - g.pads[1] * walk_stride_w
    return tuple(
        RowBlock(top_left + n * g.x_strides[0], g.out_h * g.out_w, g.out_w,
                 g.stride[1] * walk_stride_w, g.stride[0] * g.x_strides[2])
        for n in range(g.x_shape[0])
    )  # fmt: skip


def _y_rows(base: int, g: ConvGeometry) -> tuple[RowBlock, ...]:
    """Return Y's rows, one block per image: row p is output pixel p's first channel."""
    return tuple(
        RowBlock(base + n * g.y_strides[0], g.out_h * g.out_w, g.out_w, g.y_strides[3],
                 g.y_strides[2])
        for n in range(g.x_shape[0])
    )  # fmt: skip
