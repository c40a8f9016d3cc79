"""PRelu with a slope per channel as operators the accelerator runs.

PRelu(x, a) = max(x, 0) + a * min(x, 0). With one slope a scalar it is one activation table;
with a slope per channel (MTCNN, face detectors: a of shape [C, 1, 1]) it is not one function
of x, so it stayed on the host. Written as

    pos = Relu(x)       neg = Min(x, 0)       y = Add(pos, Mul(neg, a[1, C, 1, 1]))

it becomes, after post-training quantization, two activation tables (Relu and Min of the
same quantized x), a QMul by a per-channel constant and a QAdd of two tensors on the vector
unit. The float rewrite equals PRelu exactly (each element takes one branch: the other term is
0); the quantized model rounds Relu, Min, the product and the sum once each.

Preconditions (else nothing changes): a float model, x float of static shape with channels on
axis 1 (rank >= 2), a float32 slope of more than one element that varies only along axis 1.
"""

import numpy as np

from systolic.ir import DataType, Model, Node, Tensor
from systolic.mapper.passes.channel_affine import channel_vector
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    replace_graph,
    splice,
    tensor,
    with_graph,
)
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.mapper.passes.report import PassReport

__all__ = ["decompose_prelu"]


def decompose_prelu(model: Model, report: PassReport) -> Model:
    """Return `model` with each float PRelu of a per-channel slope written as the module
    docstring says (the same object when there is none)."""
    if is_quantized(model):
        return model
    graph = model.graph
    constants = constants_of(graph)
    namer = Namer(graph)
    replaced: dict[int, list[Node]] = {}
    new_constants: list[Tensor] = []
    for prelu in graph.nodes:
        if prelu.op_type != "PRelu" or prelu.domain != "" or len(prelu.inputs) != 2:
            continue
        x, slope = prelu.inputs
        found = graph.type_of(x)
        value = constants.get(slope)
        if (found is None or found.dtype != DataType.FLOAT or not found.is_static
                or found.shape is None or value is None or value.size <= 1):
            continue
        vector = channel_vector(graph, x, value, prelu.outputs[0])
        if vector is None:
            continue
        rank = len(found.shape)
        nodes, tensors = _rewrite(prelu, vector.astype(np.float32), rank, namer)
        replaced[id(prelu)] = nodes
        new_constants += tensors
        report.note(prelu.label, "PRelu as Relu(x) + Min(x, 0) * slope per channel")
    if not replaced:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, replaced, set()),
                                           new_constants))


def _rewrite(prelu: Node, slope: np.ndarray, rank: int,
             namer: Namer) -> tuple[list[Node], list[Tensor]]:
    """Return the four nodes that compute `prelu` and their two constants."""
    x, y, base = prelu.inputs[0], prelu.outputs[0], prelu.name or prelu.label
    zero, a = namer(f"{base}_zero"), namer(f"{base}_slope")
    shape = (1, slope.size) + (1,) * (rank - 2)
    tensors = [tensor(zero, np.array(0, np.float32)), tensor(a, slope.reshape(shape))]
    pos, neg, scaled = namer(f"{y}_positive"), namer(f"{y}_negative"), namer(f"{y}_scaled")
    nodes = [make_node("Relu", [x], [pos], name=namer(f"{base}_relu")),
             make_node("Min", [x, zero], [neg], name=namer(f"{base}_min")),
             make_node("Mul", [neg, a], [scaled], name=namer(f"{base}_slope_mul")),
             make_node("Add", [pos, scaled], [y], name=prelu.name)]
    return nodes, tensors
