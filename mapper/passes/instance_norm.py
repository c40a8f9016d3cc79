"""InstanceNormalization of a float [N, C, T] tensor (a GroupNorm with one group per channel
as torch exports it: wav2vec2's feature extractor) normalizes each (n, c) row over its last
axis: a layer normalization over the last axis. It is rewritten as the decomposed form that
`fuse_layernorm` makes one LAYERNORM of, before quantization:

    mean = ReduceMean(x, [-1]), d = x - mean, var = ReduceMean(d * d, [-1]),
    y = d / Sqrt(var + epsilon) [* scale[C, 1]] [+ B[C, 1]]

(the scale and B steps only when they are not 1 and 0). The same function in float (the
rounding of the sums differs). Other ranks stay as they are.

In a QDQ model (onnxruntime's static quantizer) x is a DequantizeLinear's output and the
scale and B are DequantizeLinear nodes of 8-bit constants (or of the QuantizeLinear of
constants): their values are the reference DequantizeLinear's results, so the decomposed
chain computes what the node did, and `fuse_layernorm` fuses it between x's
DequantizeLinear and the QuantizeLinear after it. Only when they dequantize to exactly 1
and 0 (torch's GroupNorm export: its affine follows the Reshape back): a per-channel scale
or B would need the normalized value quantized with a calibrated scale, which a quantized
model does not give, so such a node stays as it is.
"""

import dataclasses
from collections.abc import Mapping

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
from systolic.reference.executor import make_op

__all__ = ["constant_value", "instance_norm_to_layernorm"]

_CONSTANT_STEPS = frozenset({"DequantizeLinear", "QuantizeLinear"})


def instance_norm_to_layernorm(model: Model, report: PassReport) -> Model:
    """Return `model` with each float rank-3 InstanceNormalization of constant (or, in a QDQ
    model, dequantized constant 1 and 0) scale and B as the decomposed layer normalization
    over the last axis; `model` itself when none is."""
    graph = model.graph
    constants = constants_of(graph)
    producers, opsets = graph.producers(), dict(model.opsets)
    opset = opsets.get("", 0)
    namer, added, replaced = Namer(graph), [], {}
    for node in graph.nodes:
        if node.op_type != "InstanceNormalization" or node.domain != "":
            continue
        found = graph.type_of(node.inputs[0])
        scale, bias = (constant_value(name, constants, producers, opsets)
                       for name in node.inputs[1:3])
        if (found is None or found.shape is None or len(found.shape) != 3
                or found.dtype.numpy != np.float32 or scale is None or bias is None):
            continue
        dequantized = any(name not in constants for name in node.inputs[1:3])
        if dequantized and not (np.all(scale == 1.0) and np.all(bias == 0.0)):
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


def constant_value(name: str, constants: Mapping[str, np.ndarray],
                    producers: Mapping[str, Node], opsets: Mapping[str, int]) -> np.ndarray | None:
    """The float value of `name`: a constant, or a DequantizeLinear of a constant (or of the
    QuantizeLinear of constants) with constant parameters, computed by the reference's
    operators; None for a computed value."""
    if name in constants:
        return constants[name]
    node = producers.get(name)
    if node is None or node.domain != "" or node.op_type not in _CONSTANT_STEPS:
        return None
    args = [None if not n else constant_value(n, constants, producers, opsets)
            for n in node.inputs]
    if any(n and a is None for n, a in zip(node.inputs, args, strict=True)):
        return None
    (value,) = make_op(node, opsets).run(args)
    return np.asarray(value)


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
