"""A quantized Softmax over an inner axis, moved to the last axis between two Transposes:

    DQ(u) -> Softmax(axis k) -> Q   ->   Transpose(u) -> DQ -> Softmax(-1) -> Q -> Transpose

(the Transposes swap axis k with the last one and move integers: layout copies). SOFTMAX
normalises contiguous rows, so `fuse_softmax` then makes the middle a QSoftmax. YOLOv8's box
decoding (DFL: a softmax over the 16 bins of axis 1 of [1, 16, 4, anchors]) is this form.
Exact: a softmax over axis k of x is the transposed softmax over the last axis of x
transposed. Only from opset 13 (one axis; before it Softmax normalises the 2-D coercion,
which QSoftmax takes as it is) and only for a DequantizeLinear input and one QuantizeLinear
reader of per-tensor parameters, the output not a graph output.
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.ir import Model, Node
from systolic.mapper.passes.graph_tools import Namer, attr_int, constants_of, make_node
from systolic.mapper.passes.quant_params import NotFusable, per_tensor_params
from systolic.mapper.passes.report import PassReport

__all__ = ["softmax_to_last_axis"]

NOTE = "a softmax over an inner axis, over the last axis between two Transposes (SOFTMAX rows)"


def softmax_to_last_axis(model: Model, report: PassReport) -> Model:
    """Return `model` with each qualifying inner-axis Softmax moved to the last axis (module
    docstring); `model` itself when there is none."""
    graph = model.graph
    constants, producers, namer = constants_of(graph), graph.producers(), Namer(graph)
    readers = graph.consumers()
    outputs = {info.name for info in graph.outputs}
    replaced: dict[int, list[Node]] = {}
    for node in graph.nodes:
        if node.op_type != "Softmax" or node.domain != "" or node.version < 13:
            continue
        found = graph.type_of(node.inputs[0])
        if found is None or found.shape is None or not found.shape:
            continue
        rank = len(found.shape)
        axis = attr_int(node, "axis", -1) % rank
        if all(d == 1 for d in found.shape[axis + 1:]):
            continue  # the last axis already (or only size-1 axes after it)
        try:
            dq, q = _borders(node, producers, readers, outputs, constants)
        except NotFusable:
            continue
        replaced[id(node)] = _moved(node, dq, q, (axis, rank), namer)
        replaced[id(q)] = []
        report.note(node.label, NOTE)
    if not replaced:
        return model
    nodes = tuple(new for old in graph.nodes for new in replaced.get(id(old), [old]))
    return dataclasses.replace(model, graph=dataclasses.replace(graph, nodes=nodes))


def _borders(node: Node, producers: dict[str, Node], readers: dict[str, list[Node]],
             outputs: set[str], constants: Mapping[str, np.ndarray]) -> tuple[Node, Node]:
    """The DequantizeLinear feeding `node` and its one QuantizeLinear reader, or NotFusable."""
    dq = producers.get(node.inputs[0])
    users = readers.get(node.outputs[0], [])
    if dq is None or dq.op_type != "DequantizeLinear" or dq.domain != "":
        raise NotFusable("the input is not read through a DequantizeLinear")
    if node.outputs[0] in outputs or len(users) != 1 or users[0].op_type != "QuantizeLinear":
        raise NotFusable("the output is not read by one QuantizeLinear only")
    for border in (dq, users[0]):
        zero = border.inputs[2] if len(border.inputs) > 2 and border.inputs[2] else None
        per_tensor_params(constants, border.inputs[1], zero, "softmax border")
    return dq, users[0]


def _moved(node: Node, dq: Node, q: Node, where: tuple[int, int], namer: Namer) -> list[Node]:
    """Transpose -> DQ -> Softmax(last axis) -> Q -> Transpose, writing q's output."""
    axis, rank = where
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    attrs = {"perm": tuple(perm)}
    base = node.name or node.outputs[0]
    moved, real, soft, integers = (namer(f"{base}_{s}") for s in ("rows", "rows_real",
                                                                   "rows_softmax", "rows_q"))
    return [make_node("Transpose", [dq.inputs[0]], [moved], name=namer(f"{base}_transpose"),
                      attrs=attrs),
            make_node("DequantizeLinear", [moved, *dq.inputs[1:]], [real],
                      name=namer(f"{base}_dequantize")),
            dataclasses.replace(node, inputs=(real,), outputs=(soft,),
                                attrs=type(node.attrs)({**dict(node.attrs), "axis": -1})),
            dataclasses.replace(q, inputs=(soft, *q.inputs[1:]), outputs=(integers,)),
            make_node("Transpose", [integers], list(q.outputs),
                      name=namer(f"{base}_transpose_back"), attrs=attrs)]
