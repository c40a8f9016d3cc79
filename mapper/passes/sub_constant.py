"""A Sub of a computed float tensor and a whole-tensor constant, as an Add of that constant:

    Sub(x, C)  ->  Add(x, -C)            (the same IEEE result: x - c == x + (-c))
    Sub(C, x)  ->  Add(Neg(x), C)        (the same IEEE result: c - x == (-x) + c)

A YOLOv8-style detector's box decode subtracts the distances it predicts from a constant grid
of anchor points (x1y1 = anchors - lt, anchors [1, 2, A]); a constant of the operand's own
shape is neither one value per channel (`channel_affine`) nor a scalar (an activation table),
so the Sub stayed float on the host. An Add of such a constant is quantized as a QAdd whose B is
a constant in memory (`constant_operand_ptq`), and Neg is an activation table.

Only constants `constant_operand_ptq.constant_operand_index` accepts for an Add are taken (a
finite float32 constant of more than one element in the computed operand's shape, leading 1s
added); scalar and per-channel constants stay Subs (tables and channel affines already).
"""

import dataclasses

from systolic.ir import Model, Node, Tensor
from systolic.mapper.passes.constant_operand_ptq import constant_operand_index
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    replace_graph,
    tensor,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["sub_constant_to_add"]


def sub_constant_to_add(model: Model, report: PassReport) -> Model:
    """Return `model` with each Sub of a whole-tensor float constant rewritten as an Add (the
    module docstring); `model` itself when none is."""
    graph = model.graph
    if not any(n.op_type == "Sub" for n in graph.nodes):
        return model
    constants, namer = constants_of(graph), Namer(graph)
    added: list[Tensor] = []
    nodes: list[Node] = []
    for node in graph.nodes:
        index = (constant_operand_index(node, graph, constants, ("Sub",))
                 if node.op_type == "Sub" else None)
        if index is None:
            nodes.append(node)
            continue
        base = node.name or node.outputs[0]
        x, c = node.inputs[1 - index], node.inputs[index]
        if index == 1:  # x - C
            negated = namer(f"{c}_negated")
            added.append(tensor(negated, -constants[c]))
            nodes.append(make_node("Add", [x, negated], node.outputs, name=node.name))
        else:  # C - x
            negated = namer(f"{base}_negated")
            nodes += [make_node("Neg", [x], [negated], name=namer(f"{base}_neg")),
                      make_node("Add", [negated, c], node.outputs, name=node.name)]
        report.note(node.label, "a Sub of a constant of its operand's shape, as an Add of it")
    if len(nodes) == len(graph.nodes) and not added:
        return model
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))
