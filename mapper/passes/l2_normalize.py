"""L2 normalization over the last axis (PyTorch's F.normalize(x, dim=-1): XCiT's and EdgeNeXt's
cross-covariance attention, CLIP-style embedding heads) as a sum of squares on the array:

    n = ReduceL2(x, last axis, keepdims=1)             s = MatMul(Pow(x, 2), ones[H, 1])
    c = Clip(n, eps)            (optional)      ->      n = Sqrt(s);  c = Clip(n, eps)
    e = Expand(c, shape of x)   (optional)              y = Mul(x, Reciprocal(c))
    y = Div(x, e)

The exporter's Expand only repeats c along the last axis, which the Div's broadcasting does
anyway, so it is dropped (kept when something else reads it). Once quantized the sum of squares
is a QMatMul on the array, Sqrt -> Clip -> Reciprocal one activation table of s, and x * (1/c)
the vector unit's per-row product (as an RMS norm's, `rms_mean`). In float, the sum of squares
in another order and x * (1 / c) instead of x / c differ from the original by float roundings
(a few ulp).

Rewritten in a float model, the float part of a dynamically quantized one, or a statically
quantized one where x is a DequantizeLinear's result (the float island onnxruntime's
quantizers leave; `float_island` quantizes it), as `rms_mean` does; a ReduceL2 over other
axes, or whose result has readers other than this chain, stays.
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Model, Node
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
from systolic.mapper.passes.report import PassReport

__all__ = ["l2_normalize_to_matmul"]


@dataclasses.dataclass(frozen=True)
class _Graph:
    """`graph` with its producers, constants and how many readers each value has."""

    graph: Graph
    producers: dict[str, Node]
    constants: dict[str, np.ndarray]
    readers: dict[str, int]

    @staticmethod
    def of(graph: Graph) -> "_Graph":
        readers: dict[str, int] = {}
        for name in ([n for node in graph.nodes for n in node.inputs]
                     + [info.name for info in graph.outputs]):
            readers[name] = readers.get(name, 0) + 1
        return _Graph(graph, graph.producers(), constants_of(graph), readers)


@dataclasses.dataclass(frozen=True)
class _Chain:
    """One L2 normalization y = x / [Expand](Clip?(ReduceL2(x))) over the last axis of size
    `length`: `reduce` the ReduceL2, `div` the Div, `expand` the dropped Expand (or None)."""

    reduce: Node
    div: Node
    expand: Node | None
    length: int


def l2_normalize_to_matmul(model: Model, report: PassReport) -> Model:
    """Return `model` with each L2 normalization over the last axis rewritten as the module
    docstring says; `model` itself when none is."""
    graph = model.graph
    if not any(n.op_type == "ReduceL2" for n in graph.nodes):
        return model
    static = is_quantized(model) and not any(
        n.op_type == "DynamicQuantizeLinear" and n.domain == "" for n in graph.nodes)
    context = _Graph.of(graph)
    chains = [c for node in graph.nodes if (c := _chain(context, node)) is not None
              and (not static or _of_dequantized(context, c))]
    if not chains:
        return model
    namer, added = Namer(graph), []
    replaced: dict[int, list[Node]] = {}
    for chain in chains:
        x = chain.div.inputs[0]
        base = chain.reduce.name or chain.reduce.outputs[0]
        two, ones = namer(f"{base}_two"), namer(f"{base}_ones")
        squares, total, inverse = namer(f"{base}_squares"), namer(f"{base}_sum"), namer(f"{base}_inverse")
        added += [tensor(two, np.array(2.0, np.float32)),
                  tensor(ones, np.ones((chain.length, 1), np.float32))]
        replaced[id(chain.reduce)] = [
            make_node("Pow", [x, two], [squares], name=namer(f"{base}_pow")),
            make_node("MatMul", [squares, ones], [total], name=namer(f"{base}_matmul")),
            make_node("Sqrt", [total], list(chain.reduce.outputs), name=namer(f"{base}_sqrt"))]
        divisor = chain.div.inputs[1] if chain.expand is None else chain.expand.inputs[0]
        replaced[id(chain.div)] = [
            make_node("Reciprocal", [divisor], [inverse], name=namer(f"{base}_reciprocal")),
            make_node("Mul", [x, inverse], list(chain.div.outputs), name=chain.div.name)]
        if chain.expand is not None:
            replaced[id(chain.expand)] = []
        report.note(chain.reduce.label, "an L2 normalization, as a sum of squares on the array "
                    "and a product by the reciprocal")
    nodes = [new for node in graph.nodes for new in replaced.get(id(node), [node])]
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def _chain(context: _Graph, div: Node) -> _Chain | None:
    """The L2 normalization ending at Div `div` (module docstring), or None."""
    if div.op_type != "Div" or div.domain != "" or len(div.inputs) != 2:
        return None
    x, divisor = div.inputs
    graph, producers, readers = context.graph, context.producers, context.readers
    expand = producers.get(divisor)
    if expand is not None and expand.op_type == "Expand" and expand.domain == "":
        if readers.get(divisor, 0) != 1 or _shape(graph, div.outputs[0]) != _shape(graph, x):
            return None
        divisor = expand.inputs[0]
    else:
        expand = None
    clip = producers.get(divisor)
    if clip is not None and clip.op_type == "Clip" and clip.domain == "":
        if readers.get(divisor, 0) != 1 or not _lower_bound_only(context, clip):
            return None
        divisor = clip.inputs[0]
    reduce = producers.get(divisor)
    if (reduce is None or reduce.op_type != "ReduceL2" or reduce.domain != ""
            or reduce.inputs[0] != x or readers.get(divisor, 0) != 1):
        return None
    length = _last_axis_length(context, reduce)
    return None if length is None else _Chain(reduce, div, expand, length)


def _shape(graph: Graph, name: str) -> tuple[object, ...] | None:
    found = graph.type_of(name)
    return None if found is None or found.shape is None else tuple(found.shape)


def _lower_bound_only(context: _Graph, clip: Node) -> bool:
    """True for Clip(n, min) with a constant min and no max (opset >= 11 inputs), or a `min`
    attribute and no `max` one (opset 6)."""
    if len(clip.inputs) > 1:
        return (scalar_constant(context.constants, clip.inputs[1]) is not None
                and (len(clip.inputs) < 3 or not clip.inputs[2]))
    return "max" not in clip.attrs


def _last_axis_length(context: _Graph, reduce: Node) -> int | None:
    """H when ReduceL2 `reduce` reduces the last axis alone of a static float32 [..., H],
    keeping it; else None."""
    if attr_int(reduce, "keepdims", 1) != 1:
        return None
    found = context.graph.type_of(reduce.inputs[0])
    if (found is None or found.shape is None or not found.is_static or not found.shape
            or found.dtype.numpy != np.float32):
        return None
    axes = attr_ints(reduce, "axes")
    if len(reduce.inputs) > 1 and reduce.inputs[1]:
        value = context.constants.get(reduce.inputs[1])
        axes = None if value is None else tuple(int(a) for a in value.reshape(-1))
    rank, size = len(found.shape), found.shape[-1]
    if axes is None or len(axes) != 1 or axes[0] % rank != rank - 1:
        return None
    return size if isinstance(size, int) and size > 1 else None


def _of_dequantized(context: _Graph, chain: _Chain) -> bool:
    """True when x is a DequantizeLinear's result (a statically quantized model's float
    island)."""
    source = context.producers.get(chain.div.inputs[0])
    return source is not None and source.op_type == "DequantizeLinear" and source.domain == ""
