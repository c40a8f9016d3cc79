"""Unroll RNN, GRU and LSTM over their (static) sequence into plain float ONNX nodes, so that
quantize_float and the fusions put the gate matmuls on the array (QMatMul), the gate functions
in the activation unit (QTable) and the gate products and sums in the vector unit (QMul,
QAdd).

The algebra (systolic/reference/ops/op_recurrent.py states the operators' semantics), per
direction d and gate k (LSTM i, o, f, c; GRU z, r, h; RNN one gate), W_k, R_k the gate's
[hidden, *] rows of W[d], R[d] and Wb_k, Rb_k its biases:

- the input projection of every time step at once: XW_k = X·W_k^T + (Wb_k + Rb_k), one
  MatMul per gate over the whole [seq, batch, input] X (layout 1: [batch, seq, input]);
  GRU's h gate with `linear_before_reset` adds only Wb_h there (Rb_h is inside the reset);
- per step t (the reverse direction from the last step down): a_k = XW_k[t] (a Gather on the
  time axis) + H_{t-1}·R_k^T (a MatMul per gate: no split of a 4H-wide result is needed);
  `clip` is a Clip of the functions' inputs (not of LSTM's h(C_t)); activations are the
  equivalent ONNX ops (Affine: Mul, Add; ScaledTanh: Mul, Tanh, Mul; Softsign: Div(x, Abs(x)
  + 1); ThresholdedRelu: Where(x > alpha, x, 0));
- LSTM: i = f(a_i + P_i·C), f = f(a_f + P_f·C) (`input_forget`: 1 - i), C_t = f·C + i·g(a_c),
  o = f(a_o + P_o·C_t), H_t = o·h(C_t);
- GRU: z = f(a_z), r = f(a_r), h~ = g(XW_h[t] + (r·H)·R_h^T) (`linear_before_reset`:
  g(XW_h[t] + r·(H·R_h^T + Rb_h))), H_t = (1 - z)·h~ + z·H;
- RNN: H_t = f(a);
- Y = Concat over time of the H_t (reshaped to [1, 1, batch, hidden], layout 1 [batch, 1,
  1, hidden]), the directions concatenated; Y_h, Y_c the last states (reshaped, concatenated).

A state that is absent or a constant of zeros is no node at all (the first step has no
recurrent matmul); a nonzero constant state's products are computed here in float64.

com.microsoft DynamicQuantizeLSTM (onnxruntime's `quantize_dynamic`; any model) unrolls the
same way with its products as onnxruntime computes them (recurrent_dynamic.py):
DynamicQuantizeLinear of X once and of H_{t-1} per step, MatMulInteger with the gate's 8-bit
columns of W and R, Cast, times a_scale·w_scale; the fusions put the MatMulIntegers on the
array (QMatMulInt) and the rest stays float on the host.

A float RNN/GRU/LSTM inside a quantized model (onnxruntime's quantizer leaves them in float)
unrolls too: `unroll_recurrent_region` also returns the names of the nodes unrolled from
float recurrent layers, the float island that `recurrent_island` and quantize_float's
`region` then quantize after training (the pipeline does this only in quantized models).

Preconditions, else the node stays on the host with the reason noted: X's shape static with
at least one step, W, R, B, P (and the scales and zero points) constants,
sequence_lens absent or a constant equal to the full length for every batch entry, and a
known activation.
"""

import dataclasses

import numpy as np

from systolic.ir import Model, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, attr_int, constants_of, replace_graph
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.mapper.passes.recurrent_activations import activation_specs
from systolic.mapper.passes.recurrent_dynamic import DynamicUnroller
from systolic.mapper.passes.recurrent_unroller import Builder, Unroller, input_name
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["DYNAMIC_LSTM", "RECURRENT_OPS", "quantizes_float_recurrent", "unroll_recurrent",
           "unroll_recurrent_region", "unrolls"]

RECURRENT_OPS = frozenset({("", "RNN"), ("", "GRU"), ("", "LSTM")})
DYNAMIC_LSTM = ("com.microsoft", "DynamicQuantizeLSTM")
_DYNAMIC_CONSTANTS = ((8, "W_scale"), (9, "W_zero_point"), (10, "R_scale"), (11, "R_zero_point"))


def unroll_recurrent(model: Model, report: PassReport) -> Model:
    """Return `model` with every unrollable recurrent node replaced by per-step nodes."""
    return unroll_recurrent_region(model, report)[0]


def unroll_recurrent_region(model: Model, report: PassReport) -> tuple[Model, frozenset[str]]:
    """Return `model` unrolled as `unroll_recurrent` does, and the names of the nodes that
    came from float RNN/GRU/LSTM nodes (not from DynamicQuantizeLSTM: its products are
    quantized already)."""
    graph = model.graph
    kinds = {(n.domain, n.op_type) for n in graph.nodes}
    if not kinds & (RECURRENT_OPS | {DYNAMIC_LSTM}):
        return model, frozenset()
    constants = constants_of(graph)
    opset = model.opset("") or 1
    namer = Namer(graph)
    nodes: list[Node] = []
    new_constants: list[Tensor] = []
    region: set[str] = set()
    for node in graph.nodes:
        why = _why_not(node, model, constants)
        if why is not None:
            if why:
                report.note(node.label, why)
            nodes.append(node)
            continue
        builder = Builder(namer, node.label, x_dtype(node, model), opset)
        dynamic = (node.domain, node.op_type) == DYNAMIC_LSTM
        (DynamicUnroller if dynamic else Unroller)(node, model, constants, builder).run()
        nodes += builder.nodes
        new_constants += builder.constants
        if not dynamic:
            region.update(n.name for n in builder.nodes)
        report.record(node.label, FUSED, into=_unrolled_into(builder.nodes))
    graph = replace_graph(graph, nodes, new_constants)
    return dataclasses.replace(model, graph=graph), frozenset(region)


def _unrolled_into(nodes: list[Node]) -> str:
    """What the report says a recurrent node was fused into: the count of unrolled nodes and
    the name of the first product (a MatMul or MatMulInteger: the report's readers, like
    inspect, follow that quoted name to the unit that runs the layer's products)."""
    first = next((n.name for n in nodes if n.op_type in ("MatMul", "MatMulInteger")), None)
    named = f", the first product {first!r}" if first is not None else ""
    return f"{len(nodes)} nodes unrolled over the sequence{named}"


def quantizes_float_recurrent(model: Model) -> bool:
    """True when `model` is quantized already and holds a float RNN/GRU/LSTM that the passes
    unroll and quantize after training: its results then differ from the model as written
    (and from onnxruntime, which runs the layer in float) by that quantization."""
    if not is_quantized(model):
        return False
    constants = constants_of(model.graph)
    return any((node.domain, node.op_type) in RECURRENT_OPS
               and _why_not(node, model, constants) is None for node in model.graph.nodes)


def unrolls(node: Node, model: Model) -> bool:
    """True when `node` is a recurrent node (RNN, GRU, LSTM, DynamicQuantizeLSTM) that
    `unroll_recurrent` unrolls."""
    return _why_not(node, model, constants_of(model.graph)) is None


def x_dtype(node: Node, model: Model) -> np.dtype:
    x_type = model.graph.type_of(node.inputs[0])
    assert x_type is not None
    return x_type.dtype.numpy


def _why_not(node: Node, model: Model, constants: dict[str, np.ndarray]) -> str | None:
    """None to unroll `node`, "" for a node that is not recurrent, else the reason not to."""
    key = (node.domain, node.op_type)
    if key not in RECURRENT_OPS and key != DYNAMIC_LSTM:
        return ""
    x_type = model.graph.type_of(node.inputs[0])
    if x_type is None or not x_type.is_static or x_type.shape is None:
        return "X's shape is not static: the sequence cannot be unrolled"
    if len(x_type.shape) != 3 or x_type.dtype.numpy.kind != "f":
        return "X is not a float tensor of rank 3"
    layout = attr_int(node, "layout", 0)
    seq = int(x_type.shape[1] if layout else x_type.shape[0])  # type: ignore[arg-type]
    if seq < 1:
        return "the sequence is empty"
    needed = ((1, "W"), (2, "R"), (3, "B"), (7, "P"))
    for index, what in needed + (_DYNAMIC_CONSTANTS if key == DYNAMIC_LSTM else ()):
        name = input_name(node, index)
        if name and name not in constants:
            return f"{what} is not a constant"
    lens = input_name(node, 4)
    if lens:
        value = constants.get(lens)
        if value is None or not np.all(value == seq):
            return f"sequence_lens is not a constant equal to the full length {seq}"
    try:
        activation_specs(node)
    except ValueError as error:
        return str(error)
    return None
