"""Values with no elements, and the Concats that read them.

A value whose static shape has a zero dimension holds nothing: whatever node computes it, its
contents are known before running (Phi-3's partial rotary embedding with a factor of 1 slices
the "pass-through" part q[..., 16:] of a head of 16: a [1, H, S, 0] Slice, concatenated back
after the rotated part). Such a Slice has no strided view to lower (it ran on the host, with
the Concat reading it), so:

- a node every output of which is an empty static-shaped value (none a graph output) is
  folded: each output becomes an empty constant of its type (any operator, QuantizeLinear
  and DequantizeLinear included: there is no weight to hide);
- a Concat (ai.onnx) drops its empty constant inputs, and com.microsoft's QLinearConcat the
  (x, scale, zero point) triples of its empty constant x: a concatenation of nothing along
  the axis adds nothing. A Concat left with one input and not a graph output is removed, its
  readers reading that input (the same values: a Concat of one input is its input);
  a QLinearConcat left with one triple stays (it may requantize).

Exact: no element is added, dropped or changed.
"""

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import constants_of, rename_inputs, replace_graph, tensor
from systolic.mapper.passes.report import FOLDED, REMOVED, PassReport

__all__ = ["drop_empty_values"]


def drop_empty_values(model: Model, report: PassReport) -> Model:
    """Return `model` with every node of empty outputs folded and the empty inputs of
    Concats dropped (module docstring); `model` itself when nothing changes."""
    graph = model.graph
    folded, nodes = _fold_empty(graph, report)
    constants = {**constants_of(graph), **{t.name: t.data for t in folded}}
    outputs = {info.name for info in graph.outputs}
    kept: list[Node] = []
    aliases: dict[str, str] = {}
    for node in nodes:
        narrowed = _without_empty_inputs(node, constants)
        if narrowed is not node and _is_copy(narrowed) and narrowed.outputs[0] not in outputs:
            aliases[narrowed.outputs[0]] = narrowed.inputs[0]
            report.record(node.label, REMOVED, reason="a Concat of one non-empty input")
            continue
        kept.append(narrowed)
    if not folded and all(a is b for a, b in zip(kept, graph.nodes, strict=False)) \
            and len(kept) == len(graph.nodes):
        return model
    kept = [rename_inputs(node, _resolved(aliases)) for node in kept]
    return dataclasses.replace(model, graph=replace_graph(graph, kept, folded))


def _fold_empty(graph: Graph, report: PassReport) -> tuple[list[Tensor], list[Node]]:
    """The empty constants of every node whose outputs are all empty (static shapes, not
    graph outputs), and the nodes left."""
    outputs = {info.name for info in graph.outputs}
    folded: list[Tensor] = []
    nodes: list[Node] = []
    for node in graph.nodes:
        empties = [_empty_value(graph, name) for name in node.outputs if name]
        if (not empties or any(value is None for value in empties)
                or outputs.intersection(node.outputs)):
            nodes.append(node)
            continue
        for name, value in zip([n for n in node.outputs if n], empties, strict=True):
            assert value is not None
            folded.append(tensor(name, value))
        report.record(node.label, FOLDED, reason="its result has no elements")
    return folded, nodes


def _empty_value(graph: Graph, name: str) -> np.ndarray | None:
    """An empty array of value `name`'s type and static shape when that shape has a zero
    dimension; else None."""
    found = graph.type_of(name)
    if (found is None or found.shape is None or not found.is_static
            or not found.dtype.has_numpy):
        return None
    shape = tuple(int(d) for d in found.shape)  # type: ignore[arg-type]
    if math.prod(shape) != 0:
        return None
    return np.zeros(shape, found.dtype.numpy)


def _without_empty_inputs(node: Node, constants: Mapping[str, np.ndarray]) -> Node:
    """`node` without the empty constant inputs a Concat or a QLinearConcat concatenates
    (at least one input kept); `node` itself when it has none or is neither."""
    def empty(name: str) -> bool:
        return name in constants and constants[name].size == 0

    if node.op_type == "Concat" and node.domain == "":
        inputs = tuple(name for name in node.inputs if not empty(name))
    elif node.op_type == "QLinearConcat" and node.domain == "com.microsoft":
        triples = [node.inputs[i:i + 3] for i in range(2, len(node.inputs), 3)]
        inputs = node.inputs[:2] + tuple(
            name for triple in triples if not empty(triple[0]) for name in triple)
    else:
        return node
    if inputs == node.inputs or inputs == node.inputs[:2] or not inputs:
        return node  # (every input empty: the Concat's own result is, folded above)
    return dataclasses.replace(node, inputs=inputs)


def _is_copy(node: Node) -> bool:
    """True for an ai.onnx Concat of one input."""
    return node.op_type == "Concat" and node.domain == "" and len(node.inputs) == 1


def _resolved(aliases: Mapping[str, str]) -> dict[str, str]:
    """`aliases` with chains followed to their end (a Concat of a removed Concat)."""
    found = {}
    for name in aliases:
        target = aliases[name]
        while target in aliases:
            target = aliases[target]
        found[name] = target
    return found
