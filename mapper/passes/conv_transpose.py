"""ConvTranspose as ordinary Convs and layout ops, so the array runs it.

With W' the kernel with its channel axes swapped per group (W'[g·M/g + m, c] =
W[g·C/g + c, m]), exact in real arithmetic (conv_transpose_geometry has the algebra):

- Polyphase, when the output splits evenly into stride phases (the usual upsampling: kernel
  = stride, no pads; or kernel 4, stride 2, pads 1; ...): one Conv per phase (s_h·s_w of
  them) over x itself, each with its taps of W', then the phases' outputs interleaved. The
  Convs' MACs are exactly the transposed convolution's.
- Zero insertion, otherwise: x interleaved with fill blocks (x[i] at P_b + i·s), then one
  Conv with W' flipped, dilation d, the rest of the border as its pads (a Slice on the host
  when a border must shrink). Its MACs, counted as array MACs, include the inserted zeros:
  about s_h·s_w times the transposed convolution's.

Interleaving is Reshape + Concat only (`interleave`): aliases and COPYs on the accelerator
for 8-bit tensors.

Forms:
- QDQ: DQ(x_q) -> ConvTranspose(DQ(W_q) or a float W, B) -> Q, with x per tensor and W per
  tensor or per output channel (axis 1). Polyphase: each phase is DQ(x_q) -> Conv(DQ(W'_q
  taps), B) -> Q (the original Q's parameters) and the quantized phases are interleaved;
  zero insertion: the fill is x's zero point in x_q's type (its DQ is exactly 0), then DQ ->
  Conv -> the original Q. `fuse_qdq` makes every Conv a QConv: bit-exact with the QDQ graph.
  A float W is quantized symmetric per output channel as `quantize_float` quantizes Conv
  weights.
- float: any other ConvTranspose of a float x and a float constant W: the same with float
  Convs, interleave and fill 0 (placed before `quantize_float`, which then quantizes the
  Convs; `quantize_before_layout` moves a zero insertion's float layout onto integers).

Preconditions: ai.onnx ConvTranspose, 1-D or 2-D, static X shape, constant W and B, opset
10 or later. The first (or only) Conv keeps the ConvTranspose's name, so the report follows
it into a QConv. Otherwise the node stays as it is, with a note.
"""

import dataclasses
import itertools

import numpy as np

from systolic.errors import SystolicError
from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.passes.channel_tail import ChannelTail, channel_tail
from systolic.mapper.passes.conv_transpose_geometry import (
    AxisPhase,
    ZeroInsertion,
    axis_phases,
    zero_insertion,
)
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_int,
    constants_of,
    replace_graph,
    splice,
    with_graph,
)
from systolic.mapper.passes.interleave import Builder, crop, interleave
from systolic.mapper.passes.quant_params import NotFusable, per_tensor_params
from systolic.mapper.passes.quantize_float import quantize_weights
from systolic.mapper.passes.report import PassReport
from systolic.reference.ops.op_conv_transpose import ConvTranspose

__all__ = ["conv_transpose_to_conv", "swap_channels"]


def conv_transpose_to_conv(model: Model, report: PassReport) -> Model:
    """Return `model` with every ConvTranspose that qualifies rewritten as Convs (see the
    module docstring)."""
    graph = model.graph
    constants = constants_of(graph)
    opset = dict(model.opsets).get("", 0)
    namer = Namer(graph)
    built: dict[int, list[Node]] = {}
    dropped: set[int] = set()
    added: list[Tensor] = []
    for node in graph.nodes:
        if node.op_type != "ConvTranspose" or node.domain != "":
            continue
        out = Builder(namer, node.label)
        try:
            consumed = _rewrite(graph, node, constants, opset, out)
        except (NotFusable, SystolicError) as why:
            report.note(node.label, f"ConvTranspose not rewritten as a Conv: {why}")
            continue
        built[id(node)] = out.nodes
        dropped.update(id(n) for n in consumed)
        report.fused([n.label for n in consumed], f"ConvTranspose {node.label!r}")
        added += out.constants
    if not built:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, built, dropped), added))


@dataclasses.dataclass(frozen=True)
class _Kernel:
    """W' (channels swapped per group, not flipped) and how a Conv reads a choice of its
    taps: as a constant (float) or through a DequantizeLinear of `dq_inputs` (scale, zero
    point), along axis 0 when `per_channel`."""

    values: np.ndarray
    dq_inputs: tuple[str, ...] | None = None
    per_channel: bool = False

    def select(self, out: Builder, taps: tuple[tuple[int, ...], ...]) -> str:
        """Return the weights input of a Conv over `taps[i]` of spatial axis i."""
        chosen = self.values
        for axis, cells in enumerate(taps):
            chosen = np.take(chosen, list(cells), axis=2 + axis)
        if self.dq_inputs is None:
            return out.constant("weights", chosen)
        inputs = [out.constant("weights_q", chosen), *self.dq_inputs]
        if self.per_channel:
            return out.node("DequantizeLinear", inputs, "weights", axis=0)
        return out.node("DequantizeLinear", inputs, "weights")


def _rewrite(graph: Graph, node: Node, constants: dict[str, np.ndarray], opset: int,
             out: Builder) -> list[Node]:  # fmt: skip
    """Add to `out` what replaces ConvTranspose `node`; return the other nodes it replaces."""
    if opset < 10:
        raise NotFusable(f"opset {opset}: the rewrite writes Reshape and Slice of opset 10+")
    b_name = node.inputs[2] if len(node.inputs) > 2 else ""
    b_dq = _producer(graph, b_name, "DequantizeLinear") if b_name else None
    if b_name and b_name not in constants and (b_dq is None or b_dq.inputs[0] not in constants):
        raise NotFusable("B is neither a constant nor a constant read through a "
                         "DequantizeLinear")
    x_type = graph.type_of(node.inputs[0])
    if x_type is None or x_type.shape is None or not x_type.is_static:
        raise NotFusable("X's shape is not static")
    x_shape = tuple(int(d) for d in x_type.shape if isinstance(d, int))
    if len(x_shape) not in (3, 4):
        raise NotFusable(f"only 1-D and 2-D ConvTranspose, not {len(x_shape) - 2}-D")
    dq_x = _producer(graph, node.inputs[0], "DequantizeLinear")
    q_y = _sole_quantize_reader(graph, node.outputs[0])
    if dq_x is not None and q_y is not None:
        kernel = _quantized_kernel(graph, node, constants, out)
        tail = ChannelTail(np.ones(1), np.zeros(1), False, (q_y,), q_y.outputs[0])
    else:
        dq_x = None
        kernel, b_name, tail = _float_kernel(graph, node, constants, out)
    geometry = ConvTranspose(node.attrs, node.version or 11, node.label).geometry(
        x_shape, (x_shape[1], kernel.values.shape[0] // _group(node), *kernel.values.shape[2:]))
    conv = _ConvMaker(node, kernel, [b_name] if b_name else [], q_y if dq_x else None,
                      tail.relu)
    phases = [axis_phases(x_shape[2 + i], geometry[0][i], geometry[1][i], geometry[2][i],
                          geometry[3][i], geometry[4][i]) for i in range(len(x_shape) - 2)]
    if any(s > 1 for s in geometry[1]) and all(p is not None for p in phases):
        _polyphase(out, conv, [p for p in phases if p is not None], (x_shape, geometry[4]),
                   tail.output)
        return list(tail.nodes)
    source, fill = node.inputs[0], np.zeros((), dtype=x_type.dtype.numpy)
    if dq_x is not None:
        params = per_tensor_params(constants, dq_x.inputs[1], _opt(dq_x, 2), "input")
        source, fill = dq_x.inputs[0], np.array(params.zero_point, dtype=params.dtype.numpy)
    plan = zero_insertion(x_shape[2:], *geometry)
    x_in = _zero_inserted(out, source, x_shape, plan, fill)
    if dq_x is not None:
        x_in = out.node("DequantizeLinear", [x_in, *dq_x.inputs[1:]], "dq")
    taps = tuple(tuple(reversed(range(k))) for k in geometry[0])
    conv.add(out, x_in, taps, (geometry[2], plan.pads), first=True, last=True,
             output=tail.output if dq_x is None else node.outputs[0])
    return list(tail.nodes) if dq_x is None else []


@dataclasses.dataclass(frozen=True)
class _ConvMaker:
    """Writes the Convs of one ConvTranspose: its kernel and bias, then (float form) Relu
    when one is absorbed, or (QDQ form, polyphase) a QuantizeLinear of `q_y`'s parameters."""

    node: Node
    kernel: _Kernel
    bias: list[str]
    q_y: Node | None
    relu: bool

    def add(self, out: Builder, x: str, taps: tuple[tuple[int, ...], ...],
            spacing: tuple[tuple[int, ...], tuple[int, ...]], *, first: bool, last: bool,
            output: str = "", quantize: bool = False) -> str:  # fmt: skip
        """Add a Conv over `taps` with (dilations, pads) `spacing`; return its result."""
        dilations, pads = spacing
        tail = self.relu or quantize
        value = out.node("Conv", [x, self.kernel.select(out, taps), *self.bias], "phase",
                         output="" if tail else output, name=self.node.name if first else "",
                         kernel_shape=tuple(len(t) for t in taps), strides=(1,) * len(taps),
                         dilations=dilations, pads=pads, group=_group(self.node))
        if self.relu:
            value = out.node("Relu", [value], "relu", output=output)
        if quantize and self.q_y is not None:
            value = out.node("QuantizeLinear", [value, *self.q_y.inputs[1:]], "phase_q",
                             name=self.q_y.name if last else "")
        return value


def _zero_inserted(out: Builder, source: str, x_shape: tuple[int, ...], plan: ZeroInsertion,
                   fill: np.ndarray) -> str:  # fmt: skip
    """Return `source` interleaved with fill blocks and cropped as `plan` says."""
    strides, phases = plan.strides, plan.phases
    if all(s == 1 for s in strides):
        return crop(out, source, x_shape[2:], plan.crops)
    block = out.constant("fill", np.full(x_shape, fill))
    grid = {p: block for p in itertools.product(*(range(s) for s in strides))}
    grid[tuple(phases)] = source
    inserted = interleave(out, grid, x_shape, strides)
    spread = tuple(x_shape[2 + i] * s for i, s in enumerate(strides))
    return crop(out, inserted, spread, plan.crops)


def _polyphase(out: Builder, conv: _ConvMaker, phases: list[list[AxisPhase]],
               shapes: tuple[tuple[int, ...], tuple[int, ...]], final: str) -> None:
    """Add one Conv per output phase (each quantized by q_y's parameters in the QDQ form)
    and their interleave, written to `final`."""
    x_shape, out_spatial = shapes
    strides = tuple(len(axis) for axis in phases)
    combos = list(itertools.product(*(range(s) for s in strides)))
    grid: dict[tuple[int, ...], str] = {}
    for index, combo in enumerate(combos):
        chosen = [phases[axis][q] for axis, q in enumerate(combo)]
        pads = tuple(p.pads[0] for p in chosen) + tuple(p.pads[1] for p in chosen)
        grid[combo] = conv.add(out, conv.node.inputs[0], tuple(p.taps for p in chosen),
                               (tuple(p.dilation for p in chosen), pads), first=index == 0,
                               last=index == len(combos) - 1, quantize=True)
    cells = tuple(o // s for o, s in zip(out_spatial, strides, strict=True))
    interleave(out, grid, (x_shape[0], conv.kernel.values.shape[0], *cells), strides,
               output=final)


def swap_channels(w: np.ndarray, group: int) -> np.ndarray:
    """Return ConvTranspose kernel `w` [C, M/group, *k] as [M, C/group, *k]: the channel axes
    swapped within each group (taps unchanged)."""
    c, m_per, *kernel = w.shape
    per_group = w.reshape(group, c // group, m_per, *kernel).swapaxes(1, 2)
    return np.ascontiguousarray(per_group.reshape(group * m_per, c // group, *kernel))


def _float_kernel(graph: Graph, node: Node, constants: dict[str, np.ndarray],
                  out: Builder) -> tuple[_Kernel, str, ChannelTail]:  # fmt: skip
    """Return W' with the per-channel ops after `node` folded in (`channel_tail`), the bias
    input ("" for none) and that tail."""
    w = constants.get(node.inputs[1])
    if w is None or w.dtype.kind != "f":
        raise NotFusable("W is not a float constant and X is not read through a "
                         "DequantizeLinear with the output quantized")
    swapped = swap_channels(w, _group(node))
    bias = node.inputs[2] if len(node.inputs) > 2 else ""
    tail = channel_tail(graph, node.outputs[0], swapped.shape[0], constants)
    if not tail.nodes or (len(tail.nodes) == 1 and tail.relu):
        return _Kernel(swapped), bias, tail
    if bias and bias not in constants:
        raise NotFusable("B is not a float constant, and per-channel ops follow")
    scaled = swapped.astype(np.float64) * tail.scale.reshape((-1,) + (1,) * (w.ndim - 1))
    old = constants[bias].astype(np.float64).reshape(-1) if bias else 0.0
    new_bias = out.constant("bias", (old * tail.scale + tail.offset).astype(w.dtype))
    return _Kernel(scaled.astype(w.dtype)), new_bias, tail


def _quantized_kernel(graph: Graph, node: Node, constants: dict[str, np.ndarray],
                      out: Builder) -> _Kernel:  # fmt: skip
    """Return W' read through DequantizeLinear: W's own integers and parameters, or a float
    W quantized symmetric per output channel."""
    group, w_name = _group(node), node.inputs[1]
    if w_name in constants and constants[w_name].dtype.kind == "f":
        values, scale = quantize_weights(swap_channels(constants[w_name], group), 0)
        return _Kernel(values, (out.constant("weights_scale", scale),), per_channel=True)
    dq = _producer(graph, w_name, "DequantizeLinear")
    if dq is None or dq.inputs[0] not in constants:
        raise NotFusable("W is neither a float constant nor a constant read through a "
                         "DequantizeLinear")
    values = constants[dq.inputs[0]]
    found, zero_name = constants.get(dq.inputs[1]), _opt(dq, 2)
    zero = constants.get(zero_name) if zero_name else None
    if found is None or (zero_name and zero is None):
        raise NotFusable("W's scale or zero point is not a constant")
    swapped = swap_channels(values, group)
    if found.size == 1:
        return _Kernel(swapped, tuple(dq.inputs[1:3]))
    if attr_int(dq, "axis", 1) % values.ndim != 1 or found.size != values.shape[1]:
        raise NotFusable("W is quantized per input channel (axis 0), not per output channel")
    inputs = [out.constant("weights_scale", np.tile(found.reshape(-1), group))]
    if zero is not None:
        inputs.append(out.constant("weights_zero_point", np.tile(zero.reshape(-1), group)))
    return _Kernel(swapped, tuple(inputs), per_channel=True)


def _producer(graph: Graph, name: str, op_type: str) -> Node | None:
    for node in graph.nodes:
        if name in node.outputs:
            return node if node.op_type == op_type and node.domain == "" else None
    return None


def _sole_quantize_reader(graph: Graph, name: str) -> Node | None:
    readers = [n for n in graph.nodes if name in n.inputs]
    if len(readers) != 1 or name in {info.name for info in graph.outputs}:
        return None
    reader = readers[0]
    return reader if reader.op_type == "QuantizeLinear" and reader.domain == "" else None


def _group(node: Node) -> int:
    return attr_int(node, "group", 1)


def _opt(node: Node, index: int) -> str:
    return node.inputs[index] if len(node.inputs) > index else ""
