"""The mean of squares of an RMS normalization (T5's LayerNorm, LLaMA's RMSNorm):

    ms = ReduceMean(Pow(x, 2), last axis, keepdims=1)   ->   ms = MatMul(Pow(x, 2), w)

with w the [H, 1] constant of 1/H, in a float model, the float part of a dynamically
quantized one, or a statically quantized one where x is a DequantizeLinear's result (the
float island onnxruntime's QDQ and QOperator quantizers leave; `float_island` quantizes it):
the quantizer then makes it a QMatMul on the array, the squares and 1 / sqrt(ms + eps)
activation tables. Only this form: a
ReduceMean whose Pow reads a Sub is a layer normalization's variance (fused whole later) and
stays. The sum times 1/H differs from the sum divided by H by at most one float rounding
(none when H is a power of two).

The scaling x * r by the per-row r = 1 / sqrt(ms + eps) ([N, S, 1] against x [N, S, H]) stays
as it is: the vector unit reads r one value per row of the row-major x (QMul's per-row form).

Its gamma, a Mul of that product by a constant [H] whose every reader is a MatMul reading it as
A with a constant B [H, K], is folded into those B (diag(gamma) B, one copy per reader): T5's
query/key/value and feed-forward inputs. The product's float rounding differs by one step.
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_int,
    attr_ints,
    constants_of,
    make_node,
    replace_graph,
    scalar_constant,
    tensor,
)
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.mapper.passes.report import FOLDED, PassReport

__all__ = ["rms_mean_to_matmul"]


def rms_mean_to_matmul(model: Model, report: PassReport) -> Model:
    """Return float `model` with each RMS mean of squares over the last axis as a MatMul by
    1/H (module docstring); `model` itself when none is. A dynamically quantized model
    (DynamicQuantizeLinear: onnxruntime's quantize_dynamic of LLaMA-style decoders) is
    rewritten as a float one (its float part is quantized after training, `dynamic_island`);
    in a statically quantized one only a mean of squares of a DequantizeLinear's result."""
    graph = model.graph
    static = is_quantized(model) and not any(
        n.op_type == "DynamicQuantizeLinear" and n.domain == "" for n in graph.nodes)
    constants, producers = constants_of(graph), graph.producers()
    namer, added, nodes = Namer(graph), [], []
    bases: set[str] = set()  # the x of each rewritten mean of squares
    for node in graph.nodes:
        size = _mean_of_squares(graph, node, constants, producers)
        if size is not None and static and not _of_dequantized(node, producers):
            size = None
        if size is None:
            nodes.append(node)
            continue
        bases.add(producers[node.inputs[0]].inputs[0])
        weight = namer(f"{node.name or node.outputs[0]}_weights")
        added.append(tensor(weight, np.full((size, 1), 1.0 / size, np.float32)))
        nodes.append(make_node("MatMul", [node.inputs[0], weight], list(node.outputs),
                               name=node.name))
        report.note(node.label, "the mean of squares of an RMS normalization, as a MatMul "
                    "by 1/H")
    if not added:
        return model
    scaled = {node.outputs[0] for node in nodes  # x * r's results
              if _row_scale(graph, node, bases, constants)}
    nodes = _fold_gammas(graph, nodes, scaled, constants, (namer, added))
    for label in {n.label for n in graph.nodes} - {n.label for n in nodes}:
        report.record(label, FOLDED, reason="an RMS norm's gamma, folded into the weights "
                      "of the MatMuls reading it")
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def _fold_gammas(graph: Graph, nodes: list[Node], scaled: set[str],
                 constants: dict[str, np.ndarray], made: tuple[Namer, list[Tensor]],
                 ) -> list[Node]:
    """`nodes` with each Mul(s, gamma[H]) of an `scaled` s whose readers are all MatMuls of a
    constant B [H, K] folded into their B (the module docstring); new constants into made[1]."""
    namer, added = made
    outputs = {info.name for info in graph.outputs}
    readers: dict[str, list[Node]] = {}
    for node in nodes:
        for name in node.inputs:
            readers.setdefault(name, []).append(node)
    folded: dict[str, tuple[str, np.ndarray]] = {}  # Mul output -> (its s, gamma)
    for node in nodes:
        if node.op_type != "Mul" or node.domain != "" or len(node.inputs) != 2:
            continue
        s, g = node.inputs if node.inputs[0] in scaled else node.inputs[::-1]
        gamma = constants.get(g)
        users = readers.get(node.outputs[0], [])
        if (s not in scaled or gamma is None or gamma.ndim != 1 or node.outputs[0] in outputs
                or not users or not all(_matmul_of_constant(u, node.outputs[0], constants,
                                                            gamma.size) for u in users)):
            continue
        folded[node.outputs[0]] = (s, gamma)
    result = []
    for node in nodes:
        if node.op_type == "Mul" and node.outputs[0] in folded:
            continue
        if node.op_type == "MatMul" and node.inputs[0] in folded:
            s, gamma = folded[node.inputs[0]]
            weight = namer(f"{node.inputs[1]}_gamma")
            added.append(tensor(weight, (gamma[:, None] * constants[node.inputs[1]])
                                .astype(np.float32)))
            node = dataclasses.replace(node, inputs=(s, weight))
        result.append(node)
    return result


def _matmul_of_constant(node: Node, value: str, constants: dict[str, np.ndarray],
                        size: int) -> bool:
    """True for MatMul(value, B) with a float32 constant B [size, K]."""
    b = constants.get(node.inputs[1]) if len(node.inputs) == 2 else None
    return (node.op_type == "MatMul" and node.domain == "" and node.inputs[0] == value
            and b is not None and b.ndim == 2 and b.shape[0] == size
            and b.dtype == np.float32)


def _row_scale(graph: Graph, node: Node, bases: set[str],
               constants: dict[str, np.ndarray]) -> bool:
    """True when `node` is Mul(x, r) of a rank-3 x in `bases` and a computed r of x's shape
    but 1 in the last axis."""
    if node.op_type != "Mul" or node.domain != "" or len(node.inputs) != 2:
        return False
    x, r = node.inputs if node.inputs[0] in bases else node.inputs[::-1]
    x_type, r_type = graph.type_of(x), graph.type_of(r)
    return not (x not in bases or r in constants or x_type is None or r_type is None
                or x_type.shape is None or r_type.shape is None or len(x_type.shape) != 3
                or tuple(r_type.shape) != (*x_type.shape[:-1], 1))


def _of_dequantized(mean: Node, producers: dict[str, Node]) -> bool:
    """True when the Pow that `mean` reads squares a DequantizeLinear's result (a statically
    quantized model's float RMS norm between DequantizeLinear and QuantizeLinear)."""
    base = producers.get(producers[mean.inputs[0]].inputs[0])
    return base is not None and base.op_type == "DequantizeLinear" and base.domain == ""


def _mean_of_squares(graph: Graph, node: Node, constants: dict[str, np.ndarray],
                     producers: dict[str, Node]) -> int | None:
    """H when `node` is ReduceMean(Pow(x, 2)) over the last axis of a static float32 [.., H]
    with keepdims, x not made by a Sub; else None."""
    if node.op_type != "ReduceMean" or node.domain != "" or attr_int(node, "keepdims", 1) != 1:
        return None
    source = producers.get(node.inputs[0])
    if (source is None or source.op_type != "Pow" or source.domain != ""
            or (exponent := scalar_constant(constants, source.inputs[1])) is None
            or float(exponent) != 2.0):
        return None
    base = producers.get(source.inputs[0])
    if base is not None and base.op_type == "Sub":
        return None
    found = graph.type_of(node.inputs[0])
    if (found is None or found.shape is None or not found.is_static or not found.shape
            or found.dtype.numpy != np.float32):
        return None
    rank = len(found.shape)
    axes = attr_ints(node, "axes")
    if len(node.inputs) > 1 and node.inputs[1]:
        axes = tuple(int(a) for a in constants.get(node.inputs[1], np.array([], np.int64)))
    if axes is None or len(axes) != 1 or axes[0] % rank != rank - 1:
        return None
    size = found.shape[-1]
    return size if isinstance(size, int) and size > 1 else None
