"""ConvTranspose as an ordinary Conv over a zero-inserted input, so the array runs it.

Per spatial axis (stride s, dilation d, kernel K, input size H, resolved pads p_b, p_e and
output size O, from the reference's geometry: auto_pad, output_shape and output_padding
included), input cell i adds x[i]·W[k] to output cell i·s + k·d − p_b. Put x[i] at position
P_b + i·s of a zero vector u of length O + d(K−1), P_b = d(K−1) − p_b; then

    y[o] = Σ_k u[o + k·d] · W[K−1−k]

is an ordinary Conv (stride 1, dilation d) with the kernel flipped on every spatial axis and
its channel axes swapped per group (W' [g·M/g + m, c] = W[g·C/g + c, m]): exact in real
arithmetic. The bias is the same [M] vector.

The zeros are inserted by standard layout ops the lowering runs on the accelerator for 8-bit
tensors: per strided axis, a Reshape to [N, C, outer, inner] (an alias of the channel-last
map), a Concat along axis 3 with constant fill blocks ([phase·inner] before and
[(s−1−phase)·inner] after every row: one COPY pass), and a Reshape back. Each cell then has
`phase` fill cells before it and s−1−phase after; the rest of the border is the Conv's own
padding (a halo), or a Slice (on the host) in the rare case a border must shrink (pads
larger than the kernel's reach, or no room for the s−1 trailing cells).

Cost: the Conv multiplies the inserted zeros too; its MACs, counted as array MACs, are about
s_h·s_w times the transposed convolution's useful MACs (4x for the usual 2x2 upsampling).

Forms:
- QDQ: DQ(x_q) -> ConvTranspose(DQ(W_q) or a float W, B) -> Q (x per tensor; W per tensor or
  per output channel, axis 1). The zeros go into the quantized x_q with x's zero point as
  the fill (its DQ is exactly 0), then DQ (x's parameters) -> Conv(DQ(W'_q), B) -> the same
  Q, which `fuse_qdq` makes a QConv: bit-exact with the original QDQ graph. A float W (a float
  model after `quantize_float`, which leaves ConvTranspose alone) is quantized symmetric per
  output channel as `quantize_float` quantizes Conv weights.
- float: any other ConvTranspose of a float x: the same Conv over float zeros (a host Conv
  unless quantized later; exact up to float summation order).

Preconditions: ai.onnx ConvTranspose, 1-D or 2-D, static x shape, constant W and B. The new
Conv keeps the ConvTranspose's name (the report follows it into the QConv). Otherwise the
node stays as it is, with a note.
"""

import dataclasses
import math

import numpy as np

from systolic.errors import SystolicError
from systolic.ir import AttrValue, Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, attr_int, constants_of, make_node, tensor
from systolic.mapper.passes.quant_params import NotFusable, per_tensor_params
from systolic.mapper.passes.quantize_float import quantize_weights
from systolic.mapper.passes.report import PassReport
from systolic.reference.ops.op_conv_transpose import ConvTranspose

__all__ = ["conv_transpose_to_conv"]


@dataclasses.dataclass(frozen=True)
class ZeroInsertion:
    """Per spatial axis: stride, cells of fill before each input cell (`phases`), and the
    Conv's pads (begins then ends) and Slice crops (begins then ends) around the result."""

    strides: tuple[int, ...]
    phases: tuple[int, ...]
    pads: tuple[int, ...]
    crops: tuple[int, ...]


@dataclasses.dataclass
class _Builder:
    """Collects the nodes and constants a rewrite adds."""

    namer: Namer
    label: str
    nodes: list[Node] = dataclasses.field(default_factory=list)
    constants: list[Tensor] = dataclasses.field(default_factory=list)

    def constant(self, base: str, value: np.ndarray) -> str:
        name = self.namer(f"{self.label}_{base}")
        self.constants.append(tensor(name, value))
        return name

    def node(self, op_type: str, inputs: list[str], base: str, **attrs: AttrValue) -> str:
        out = self.namer(f"{self.label}_{base}")
        self.nodes.append(make_node(op_type, inputs, [out], name=self.namer(out), attrs=attrs))
        return out


def conv_transpose_to_conv(model: Model, report: PassReport) -> Model:
    """Return `model` with every ConvTranspose that qualifies rewritten as a Conv over its
    zero-inserted input (see the module docstring)."""
    graph = model.graph
    constants = constants_of(graph)
    opset = dict(model.opsets).get("", 0)
    namer = Namer(graph)
    nodes: list[Node] = []
    added: list[Tensor] = []
    changed = False
    for node in graph.nodes:
        if node.op_type != "ConvTranspose" or node.domain != "":
            nodes.append(node)
            continue
        try:
            built = _rewrite(graph, node, constants, opset, _Builder(namer, node.label))
        except (NotFusable, SystolicError) as why:
            report.note(node.label, f"ConvTranspose not rewritten as a Conv: {why}")
            nodes.append(node)
            continue
        nodes += built.nodes
        added += built.constants
        changed = True
    if not changed:
        return model
    new_graph = dataclasses.replace(graph, nodes=tuple(nodes),
                                    initializers=graph.initializers + tuple(added))
    return dataclasses.replace(model, graph=new_graph)


def _rewrite(graph: Graph, node: Node, constants: dict[str, np.ndarray], opset: int,
             out: _Builder) -> _Builder:  # fmt: skip
    """Return the nodes and constants that replace ConvTranspose `node`."""
    if opset < 10:
        raise NotFusable(f"opset {opset}: the rewrite writes Reshape and Slice of opset 10+")
    w_name = node.inputs[1]
    b_name = node.inputs[2] if len(node.inputs) > 2 else ""
    if b_name and b_name not in constants:
        raise NotFusable("B is not a constant")
    x_type = graph.type_of(node.inputs[0])
    if x_type is None or x_type.shape is None or not x_type.is_static:
        raise NotFusable("X's shape is not static")
    x_shape = tuple(int(d) for d in x_type.shape if isinstance(d, int))
    if len(x_shape) not in (3, 4):
        raise NotFusable(f"only 1-D and 2-D ConvTranspose, not {len(x_shape) - 2}-D")
    dq_x = _producer(graph, node.inputs[0], "DequantizeLinear")
    q_y = _sole_quantize_reader(graph, node.outputs[0])
    if dq_x is not None and q_y is not None:
        params = per_tensor_params(constants, dq_x.inputs[1], _opt(dq_x, 2), "input")
        x_q = dq_x.inputs[0]
        fill = np.array(params.zero_point, dtype=params.dtype.numpy)
        w_shape = _weight_shape(graph, constants, w_name)
        insertion, conv_attrs = _plan(node, x_shape, w_shape)
        inserted = insert_zeros(out, x_q, x_shape, insertion, fill)
        x_in = out.node("DequantizeLinear", [inserted, *dq_x.inputs[1:]], "dq")
        w_in = _quantized_weights(graph, node, constants, out)
    else:
        if w_name not in constants or constants[w_name].dtype.kind != "f":
            raise NotFusable("W is not a float constant and X is not read through a "
                             "DequantizeLinear with the output quantized")
        insertion, conv_attrs = _plan(node, x_shape, constants[w_name].shape)
        fill = np.zeros((), dtype=x_type.dtype.numpy)
        x_in = insert_zeros(out, node.inputs[0], x_shape, insertion, fill)
        w_in = out.constant("weights", transposed_kernel(constants[w_name], _group(node)))
    inputs = [x_in, w_in] + ([b_name] if b_name else [])
    out.nodes.append(make_node("Conv", inputs, node.outputs[:1], name=node.name,
                               attrs=conv_attrs))
    return out


def _plan(node: Node, x_shape: tuple[int, ...],
          w_shape: tuple[int, ...]) -> tuple[ZeroInsertion, dict[str, AttrValue]]:  # fmt: skip
    """Return the zero insertion and the Conv's attributes for ConvTranspose `node`."""
    op = ConvTranspose(node.attrs, node.version or 11, node.label)
    kernel, strides, dilations, pads, out = op.geometry(x_shape, w_shape)
    insertion = zero_insertion(x_shape[2:], kernel, strides, dilations, pads, out)
    attrs: dict[str, AttrValue] = {"kernel_shape": tuple(kernel), "strides": (1,) * len(kernel),
                                "dilations": tuple(dilations), "pads": insertion.pads,
                                "group": _group(node)}
    return insertion, attrs


def zero_insertion(in_spatial: tuple[int, ...], kernel: tuple[int, ...],
                   strides: tuple[int, ...], dilations: tuple[int, ...],
                   pads: tuple[int, ...], out: tuple[int, ...]) -> ZeroInsertion:  # fmt: skip
    """Return where the zeros go for a ConvTranspose of this geometry (pads: its resolved
    begins then ends; out: its output's spatial shape)."""
    rank = len(kernel)
    phases, begins, ends = [], [], []
    for i in range(rank):
        s, reach = strides[i], dilations[i] * (kernel[i] - 1)
        before = reach - pads[i]
        after = out[i] + reach - before - (in_spatial[i] - 1) * s - 1
        low, high = max(0, s - 1 - after), min(s - 1, before)
        phase = high if low <= high else min(max(before, 0), s - 1)
        phases.append(phase)
        begins.append(before - phase)
        ends.append(after - (s - 1 - phase))
    edges = begins + ends
    return ZeroInsertion(tuple(strides), tuple(phases), tuple(max(0, e) for e in edges),
                         tuple(max(0, -e) for e in edges))


def insert_zeros(out: _Builder, x: str, shape: tuple[int, ...], plan: ZeroInsertion,
                 fill: np.ndarray) -> str:  # fmt: skip
    """Add the Reshape/Concat (and Slice) nodes that put `plan.phases[i]` fill cells before
    and strides[i] − 1 − phases[i] after every cell of `x` along each spatial axis, then crop;
    return the result's name."""
    n, c, spatial = shape[0], shape[1], list(shape[2:])
    current, current_shape = x, tuple(shape)
    for axis in reversed(range(len(spatial))):
        s, phase = plan.strides[axis], plan.phases[axis]
        if s == 1:
            continue
        outer, inner = math.prod(spatial[:axis + 1]), math.prod(spatial[axis + 1:])
        rows = (n, c, outer, inner)
        if current_shape != rows:
            current = out.node("Reshape", [current, out.constant("rows", _i64(rows))], "rows")
        parts = []
        for cells, where in ((phase, "before"), (s - 1 - phase, "after")):
            if cells:
                parts.append(out.constant(f"fill_{where}",
                                          np.full((n, c, outer, cells * inner), fill)))
        parts.insert(1 if phase else 0, current)
        current = out.node("Concat", parts, "spread", axis=3)
        current_shape = (n, c, outer, s * inner)
        spatial[axis] *= s
    final = (n, c, *spatial)
    if current_shape != final:
        current = out.node("Reshape", [current, out.constant("shape", _i64(final))],
                           "inserted")
    rank = len(spatial)
    if any(plan.crops):
        starts = plan.crops[:rank]
        ends = tuple(spatial[i] - plan.crops[rank + i] for i in range(rank))
        current = out.node("Slice", [current, out.constant("starts", _i64(starts)),
                                     out.constant("ends", _i64(ends)),
                                     out.constant("axes", _i64(tuple(range(2, 2 + rank))))],
                           "cropped")
    return current


def transposed_kernel(w: np.ndarray, group: int) -> np.ndarray:
    """Return the Conv kernel [M, C/group, *k] of ConvTranspose kernel `w` [C, M/group, *k]:
    channel axes swapped within each group, every spatial axis flipped."""
    c, m_per, *kernel = w.shape
    per_group = w.reshape(group, c // group, m_per, *kernel).swapaxes(1, 2)
    swapped = per_group.reshape(group * m_per, c // group, *kernel)
    return np.ascontiguousarray(np.flip(swapped, axis=tuple(range(2, w.ndim))))


def _quantized_weights(graph: Graph, node: Node, constants: dict[str, np.ndarray],
                       out: _Builder) -> str:  # fmt: skip
    """Return the name of the Conv's weights read through a new DequantizeLinear."""
    group = _group(node)
    w_name = node.inputs[1]
    if w_name in constants and constants[w_name].dtype.kind == "f":
        values, scale = quantize_weights(transposed_kernel(constants[w_name], group), 0)
        return out.node("DequantizeLinear", [out.constant("weights_q", values),
                                             out.constant("weights_scale", scale)],
                        "weights", axis=0)
    dq = _producer(graph, w_name, "DequantizeLinear")
    if dq is None or dq.inputs[0] not in constants:
        raise NotFusable("W is neither a float constant nor a constant read through a "
                         "DequantizeLinear")
    values = constants[dq.inputs[0]]
    found = constants.get(dq.inputs[1])
    zero = constants.get(_opt(dq, 2)) if _opt(dq, 2) else None
    if found is None or (_opt(dq, 2) and zero is None):
        raise NotFusable("W's scale or zero point is not a constant")
    scale = found
    inputs = [out.constant("weights_q", transposed_kernel(values, group))]
    if scale.size == 1:
        inputs += [dq.inputs[1]] + ([_opt(dq, 2)] if zero is not None else [])
        return out.node("DequantizeLinear", inputs, "weights")
    if attr_int(dq, "axis", 1) % values.ndim != 1 or scale.size != values.shape[1]:
        raise NotFusable("W is quantized per input channel (axis 0), not per output channel")
    inputs.append(out.constant("weights_scale", np.tile(scale.reshape(-1), group)))
    if zero is not None:
        inputs.append(out.constant("weights_zero_point", np.tile(zero.reshape(-1), group)))
    return out.node("DequantizeLinear", inputs, "weights", axis=0)


def _weight_shape(graph: Graph, constants: dict[str, np.ndarray],
                  name: str) -> tuple[int, ...]:  # fmt: skip
    if name in constants:
        return tuple(constants[name].shape)
    dq = _producer(graph, name, "DequantizeLinear")
    if dq is None or dq.inputs[0] not in constants:
        raise NotFusable("W is not a constant")
    return tuple(constants[dq.inputs[0]].shape)


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


def _i64(values: tuple[int, ...]) -> np.ndarray:
    return np.array(values, dtype=np.int64)

