"""Masks written as a select of the scores (`masked_fill`: DeBERTa's XSoftmax) made additive:

    Where(masked, low, s) -> Softmax   becomes   Add(s, Where(masked, low, 0)) -> Softmax

(and Where(kept, s, low) likewise, with Where(kept, 0, low)), when `low` is a one-element float
constant that is -inf or its type's lowest finite number and only Softmaxes read the result.
Kept positions compute s + 0 = s; masked ones s + low, which is -inf for -inf and exactly the
lowest value while |s| is below half of its unit in the last place (2^103 for float32), as the
select gave: exact for any scores a model computes. The mask then has the additive form that
`finite_masks` and `arithmetic_masks` make a table and a QAdd (the select of the scores stayed
float on the host: "not a function of one dequantized 8-bit tensor").
"""

import dataclasses

import numpy as np

from systolic.ir import Model
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    replace_graph,
    scalar_constant,
    splice,
    tensor,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["additive_masks"]


def _is_low(value: np.ndarray | None) -> bool:
    """True for a one-element float constant holding -inf or its type's lowest finite value."""
    if value is None or value.dtype.kind != "f":
        return False
    low = float(value.reshape(()))
    return low == -np.inf or low == float(np.finfo(value.dtype).min)


def additive_masks(model: Model, report: PassReport) -> Model:
    """Return `model` with each masked_fill select before Softmaxes (module docstring) made an
    Add of an additive mask; `model` itself when there is none. The Where keeps its name (it
    becomes the mask); the Add is new and writes the Where's old result. `report` is not
    written."""
    graph = model.graph
    constants, consumers = constants_of(graph), graph.consumers()
    outputs = {info.name for info in graph.outputs}
    namer, added, replaced = Namer(graph), [], {}
    for node in graph.nodes:
        if node.op_type != "Where" or node.domain != "" or len(node.inputs) != 3:
            continue
        readers = consumers.get(node.outputs[0], [])
        if (not readers or node.outputs[0] in outputs
                or any(r.op_type != "Softmax" or r.domain != "" for r in readers)):
            continue
        condition, a, b = node.inputs
        low_first = _is_low(scalar_constant(constants, a)) and b not in constants
        low_second = _is_low(scalar_constant(constants, b)) and a not in constants
        if low_first == low_second:
            continue
        low, scores = (a, b) if low_first else (b, a)
        zero = namer(f"{node.name or node.outputs[0]}_zero")
        added.append(tensor(zero, np.zeros((), constants[low].dtype)))
        mask = namer(f"{node.name or node.outputs[0]}_additive")
        branches = (low, zero) if low_first else (zero, low)
        replaced[id(node)] = [
            dataclasses.replace(node, inputs=(condition, *branches), outputs=(mask,)),
            make_node("Add", [scores, mask], [node.outputs[0]],
                      name=namer(f"{node.name or node.outputs[0]}_add"))]
    if not replaced:
        return model
    return dataclasses.replace(model, graph=replace_graph(
        graph, splice(graph.nodes, replaced, set()), added))
