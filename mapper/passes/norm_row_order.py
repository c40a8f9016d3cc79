"""A layer normalization of a whole sample flattened to one row takes the row in storage order.

torch exports GroupNorm with one group (PoolFormer, MetaFormer) as

    Reshape(x [N, C, *S] -> [N, 1, C * prod(S)]) -> InstanceNormalization -> Reshape(x's shape)

which the passes make Reshape -> systolic.QLayerNorm -> Reshape. The flattened row is in
channel-first order, not a strided view of x stored channel-last (a conv's output), so both
Reshapes ran on the host. A normalization over a row is the same function of any order of
the row's elements: QLayerNorm's statistics are exact integer sums and its output is
element-wise given them. So the first Reshape reads Transpose(x, [0, 2, ..., 1]) (channel-
last order: a view of x stored channel-last) and the second becomes Reshape([N, *S, C]) ->
Transpose([0, r-1, 1, ..., r-2]) back to x's shape. The result is bit-identical; the layout
ops are views of the accelerator's memory instead of host copies.

A QTable after the normalization (a QOperator model's requantization to the Reshape's
parameters) is element-wise too: it may stand between it and the Reshape back.

Taken when the Reshape's input has a static shape [N, C, *S] (rank >= 3) and is not a
Transpose's output (the exporter ordered the row itself), its output is
[N, 1, M] or [N, M] with M = C * prod(S), its only reader is a QLayerNorm whose only reader
(through QTables read only by the next) is a Reshape back to [N, C, *S].
"""

import dataclasses
import math

import numpy as np

from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, make_node, replace_graph, splice, tensor
from systolic.mapper.passes.report import PassReport

__all__ = ["norm_row_order"]

_ROW_NORMS = frozenset({"QLayerNorm"})
_ROW_ELEMENTWISE = frozenset({"QTable"})
"""Ops of one tensor (X first, constants after) that may follow the normalization."""


def norm_row_order(model: Model, report: PassReport) -> Model:
    """Return `model` with each whole-sample normalization (module docstring) reading its row
    in channel-last order; `model` itself when there is none."""
    graph = model.graph
    consumers, producers = graph.consumers(), graph.producers()
    namer, added, replaced = Namer(graph), [], {}
    for node in graph.nodes:
        found = _match(graph, node, consumers, producers)
        if found is None:
            continue
        norm, back = found
        first, last, constants = _reordered(graph, node, back, namer)
        replaced[id(node)], replaced[id(back)] = first, last
        added.extend(constants)
        report.note(norm.name, "normalizes a whole sample: its row is read in channel-last "
                    "order (the same result)")
    if not replaced:
        return model
    return dataclasses.replace(model, graph=replace_graph(
        graph, splice(graph.nodes, replaced, set()), added))


def _shape(graph: Graph, name: str) -> tuple[int, ...] | None:
    found = graph.type_of(name)
    if found is None or found.shape is None or not found.is_static:
        return None
    return tuple(int(d) for d in found.shape)  # type: ignore[arg-type]


def _match(graph: Graph, node: Node, consumers: dict[str, list[Node]],
           producers: dict[str, Node]) -> tuple[Node, Node] | None:
    """(the normalization, the Reshape back) when `node` is a flattening Reshape of the
    module docstring's pattern; else None."""
    if node.op_type != "Reshape" or node.domain != "":
        return None
    producer = producers.get(node.inputs[0])
    if producer is not None and producer.op_type == "Transpose":
        return None  # the exporter chose the row's order already
    source, flat = _shape(graph, node.inputs[0]), _shape(graph, node.outputs[0])
    if source is None or flat is None or len(source) < 3:
        return None
    whole = math.prod(source[1:])
    if flat not in ((source[0], 1, whole), (source[0], whole)):
        return None
    readers = consumers.get(node.outputs[0], [])
    if len(readers) != 1 or readers[0].op_type not in _ROW_NORMS:
        return None
    norm = readers[0]
    if norm.inputs[0] != node.outputs[0] or any(n == node.outputs[0] for n in norm.inputs[1:]):
        return None
    outputs = {info.name for info in graph.outputs}
    last = norm
    while True:
        after = consumers.get(last.outputs[0], [])
        if len(after) != 1 or last.outputs[0] in outputs:
            return None
        if after[0].op_type not in _ROW_ELEMENTWISE or after[0].inputs[0] != last.outputs[0]:
            break
        last = after[0]
    if (after[0].op_type != "Reshape" or after[0].domain != "" or node.outputs[0] in outputs
            or _shape(graph, after[0].outputs[0]) != source):
        return None
    return norm, after[0]


def _reordered(graph: Graph, flatten: Node, back: Node, namer: Namer
               ) -> tuple[list[Node], list[Node], list[Tensor]]:
    """The nodes replacing `flatten` and `back`, and their shape constants."""
    source = _shape(graph, flatten.inputs[0])
    assert source is not None
    rank = len(source)
    last_first = (0, *range(2, rank), 1)
    channels_last = tuple(source[i] for i in last_first)
    base = flatten.name or flatten.outputs[0]
    moved, restored = namer(f"{base}_channels_last"), namer(f"{base}_restored")
    flat_shape, back_shape = namer(f"{base}_row_shape"), namer(f"{base}_channels_last_shape")
    row = _shape(graph, flatten.outputs[0])
    assert row is not None
    constants = [tensor(flat_shape, np.array(row, np.int64)),
                 tensor(back_shape, np.array(channels_last, np.int64))]
    first = [make_node("Transpose", (flatten.inputs[0],), (moved,),
                       name=namer(f"{base}_to_channels_last"), attrs={"perm": last_first}),
             dataclasses.replace(flatten, inputs=(moved, flat_shape))]
    inverse = (0, rank - 1, *range(1, rank - 1))
    last = [dataclasses.replace(back, inputs=(back.inputs[0], back_shape),
                                outputs=(restored,)),
            make_node("Transpose", (restored,), back.outputs,
                      name=namer(f"{base}_from_channels_last"), attrs={"perm": inverse})]
    return first, last, constants
