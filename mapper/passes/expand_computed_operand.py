"""Float models, before post-training quantization: an Add or Mul of two computed tensors where
one broadcasts over the other in a way the vector unit does not (neither per channel nor
along the last axis) reads that operand through an Expand to the other's shape.

GPT-2's causal mask [1, 1, S, S] is added to the scores [1, H, S, S]: post-training
quantization takes only an Add of two operands of one shape, so the sum stayed float on the
host. With Expand(mask, [1, H, S, S]) (the broadcast the Add did, made explicit: exact) both
operands have one shape, are quantized, and the sum becomes a QAdd on the vector unit; the
Expand runs where the mask is made (on the host), at most `MAX_EXPANDED_ELEMENTS` elements.
"""

import dataclasses
import math

import numpy as np

from systolic.ir import DataType, Model
from systolic.mapper.passes.graph_tools import Namer, constants_of, make_node, replace_graph, tensor
from systolic.mapper.passes.report import PassReport
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast, per_channel_broadcast

__all__ = ["MAX_EXPANDED_ELEMENTS", "broadcast_operand", "expand_computed_operand"]

MAX_EXPANDED_ELEMENTS = 1 << 20
"""The most elements an operand is expanded to."""

_READERS = frozenset({"Add", "Mul"})


def broadcast_operand(a: tuple[int, ...], b: tuple[int, ...]) -> int | None:
    """Return which operand (0 or 1) of shapes `a`, `b` to expand to the other's shape (it
    broadcasts to it, and neither per channel nor along its last axis), else None."""
    if a == b:
        return None
    try:
        full = tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None
    if full not in (a, b) or math.prod(full) > MAX_EXPANDED_ELEMENTS:
        return None
    small = 1 if full == a else 0
    shape = (a, b)[small]
    padded = (1,) * (len(full) - len(shape)) + shape
    if math.prod(shape) <= 1 or per_channel_broadcast(full, padded) or last_axis_broadcast(
            full, shape):
        return None
    return small


def _static(model: Model, name: str) -> tuple[int, ...] | None:
    t = model.graph.type_of(name)
    if t is None or t.shape is None or not t.is_static or t.dtype != DataType.FLOAT:
        return None
    return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]


def expand_computed_operand(model: Model, report: PassReport) -> Model:
    """Return `model` with each such operand (module docstring) read through an Expand;
    `model` itself when there is none. The Expand nodes are new (the report follows them as
    host or fused nodes later, like any other)."""
    graph = model.graph
    constants, namer = constants_of(graph), Namer(graph)
    expanded: dict[tuple[str, tuple[int, ...]], str] = {}
    added, nodes = [], []
    for node in graph.nodes:
        shapes = [_static(model, n) for n in node.inputs[:2]]
        if (node.op_type not in _READERS or node.domain != "" or len(node.inputs) != 2
                or any(n in constants for n in node.inputs) or None in shapes):
            nodes.append(node)
            continue
        a, b = shapes
        assert a is not None and b is not None
        small = broadcast_operand(a, b)
        if small is None:
            nodes.append(node)
            continue
        name, full = node.inputs[small], (a, b)[1 - small]
        key = (name, full)
        if key not in expanded:
            expanded[key] = namer(f"{name}_expanded")
            shape_name = namer(f"{name}_expanded_shape")
            added.append(tensor(shape_name, np.array(full, np.int64)))
            nodes.append(make_node("Expand", [name, shape_name], [expanded[key]],
                                   name=namer(f"{node.name}_expand")))
        inputs = list(node.inputs)
        inputs[small] = expanded[key]
        nodes.append(dataclasses.replace(node, inputs=tuple(inputs)))
    if not expanded:
        return model
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))
