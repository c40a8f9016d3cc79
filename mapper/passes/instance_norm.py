"""InstanceNormalization of a float [N, C, T] tensor (a GroupNorm with one group per channel
as torch exports it: wav2vec2's feature extractor) normalizes each (n, c) row over its last
axis: a layer normalization over the last axis. It is rewritten as the decomposed form that
`fuse_layernorm` makes one LAYERNORM of, before quantization:

    mean = ReduceMean(x, [-1]), d = x - mean, var = ReduceMean(d * d, [-1]),
    y = d / Sqrt(var + epsilon) [* scale[C, 1]] [+ B[C, 1]]

(the scale and B steps only when they are not 1 and 0). The same function in float (the
rounding of the sums differs). Other ranks stay as they are.
"""

import dataclasses

import numpy as np

from systolic.ir import Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_float,
    constants_of,
    make_node,
    replace_graph,
    splice,
    tensor,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["instance_norm_to_layernorm"]


def instance_norm_to_layernorm(model: Model, report: PassReport) -> Model:
    """Return `model` with each float rank-3 InstanceNormalization of constant scale and B
    as the decomposed layer normalization over the last axis; `model` itself when none is."""
    graph = model.graph
    constants = constants_of(graph)
    opset = dict(model.opsets).get("", 0)
    namer, added, replaced = Namer(graph), [], {}
    for node in graph.nodes:
        if node.op_type != "InstanceNormalization" or node.domain != "":
            continue
        found = graph.type_of(node.inputs[0])
        scale, bias = (constants.get(name) for name in node.inputs[1:3])
        if (found is None or found.shape is None or len(found.shape) != 3
                or found.dtype.numpy != np.float32 or scale is None or bias is None):
            continue
        nodes, new = _decomposed(node, (scale, bias), namer, opset)
        replaced[id(node)] = nodes
        added.extend(new)
        report.note(node.label, "an instance normalization over the last axis: a layer "
                    "normalization")
    if not replaced:
        return model
    return dataclasses.replace(model, graph=replace_graph(
        graph, splice(graph.nodes, replaced, set()), added))


def _decomposed(node: Node, affine: tuple[np.ndarray, np.ndarray], namer: Namer,
                opset: int) -> tuple[list[Node], list[Tensor]]:
    """The decomposed nodes of InstanceNormalization `node` into its output, and their
    constants (`affine`: its scale and B)."""
    x, out = node.inputs[0], node.outputs[0]
    base = node.name or out
    mean, d, sq, var, ve, sd = (namer(f"{base}_{s}") for s in
                                ("mean", "deviation", "square", "variance", "plus_eps", "root"))
    eps = namer(f"{base}_eps")
    constants = [tensor(eps, np.array(attr_float(node, "epsilon", 1e-5), np.float32))]
    scale, bias = (np.asarray(v, np.float32).reshape(-1, 1) for v in affine)
    steps = [(op, value) for op, value, neutral in (("Mul", scale, 1.0), ("Add", bias, 0.0))
             if not np.all(value == neutral)]
    n = namer(f"{base}_normalized") if steps else out
    nodes = [_reduce_mean(x, mean, namer, opset, constants),
             make_node("Sub", (x, mean), (d,), name=namer(f"{base}_sub")),
             make_node("Mul", (d, d), (sq,), name=namer(f"{base}_square")),
             _reduce_mean(sq, var, namer, opset, constants),
             make_node("Add", (var, eps), (ve,), name=namer(f"{base}_add")),
             make_node("Sqrt", (ve,), (sd,), name=namer(f"{base}_sqrt")),
             make_node("Div", (d, sd), (n,), name=node.name or namer(f"{base}_div"))]
    last = n
    for index, (op, value) in enumerate(steps):
        result = out if index == len(steps) - 1 else namer(f"{base}_scaled")
        name = namer(f"{base}_{op.lower()}_c")
        constants.append(tensor(name, value))
        nodes.append(make_node(op, (last, name), (result,), name=namer(f"{base}_{op}")))
        last = result
    return nodes, constants


def _reduce_mean(x: str, out: str, namer: Namer, opset: int, constants: list[Tensor]) -> Node:
    """ReduceMean of `x` over the last axis with keepdims, as `opset` writes the axes."""
    name = namer(f"{out}_reduce")
    if opset >= 18:
        axes = namer(f"{out}_axes")
        constants.append(tensor(axes, np.array([-1], np.int64)))
        return make_node("ReduceMean", (x, axes), (out,), name=name, attrs={"keepdims": 1})
    return make_node("ReduceMean", (x,), (out,), name=name, attrs={"axes": (-1,), "keepdims": 1})
