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

A GroupNorm of G > 1 groups (Reshape to [N, G, C/G * prod(S)]) reads each group's row the
same way: x channel-last, regrouped [N, P, G, C/G] -> [N, G, P, C/G] by a Transpose that the
accelerator copies (LOAD + COPY) instead of the host; back likewise.

Taken when the Reshape's input has a static shape [N, C, *S] (rank >= 3) and is not a
Transpose's output (the exporter ordered the row itself), its output is
[N, 1, M] or [N, M] with M = C * prod(S) (or [N, G, M / G], 1 < G < C dividing C), its
only reader is a QLayerNorm whose only reader
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
    if _groups(source, flat) is None:
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


def _groups(source: tuple[int, ...], flat: tuple[int, ...]) -> int | None:
    """G when `flat` is [N, G, M] (or [N, M] for G = 1) with M = C / G * prod(S) for `source`
    [N, C, *S] and G < C dividing C; else None."""
    whole = math.prod(source[1:])
    if flat in ((source[0], 1, whole), (source[0], whole)):
        return 1
    if len(flat) != 3 or flat[0] != source[0] or flat[1] * flat[2] != whole:
        return None
    groups = flat[1]
    return groups if 1 < groups < source[1] and source[1] % groups == 0 else None


class _Steps:
    """Builds the chain of Transposes and Reshapes that replaces one Reshape."""

    def __init__(self, namer: Namer, base: str) -> None:
        self.namer, self.base = namer, base
        self.nodes: list[Node] = []
        self.constants: list[Tensor] = []

    def transpose(self, x: str, perm: tuple[int, ...], out: str = "") -> str:
        out = out or self.namer(f"{self.base}_t")
        self.nodes.append(make_node("Transpose", (x,), (out,), name=self.namer(
            f"{self.base}_transpose"), attrs={"perm": perm}))
        return out

    def reshape(self, x: str, shape: tuple[int, ...], like: Node | None = None,
                out: str = "") -> str:
        out = out or self.namer(f"{self.base}_r")
        target = self.namer(f"{self.base}_shape")
        self.constants.append(tensor(target, np.array(shape, np.int64)))
        if like is not None:  # the original node keeps its name (and its fate)
            self.nodes.append(dataclasses.replace(like, inputs=(x, target), outputs=(out,)))
        else:
            self.nodes.append(make_node("Reshape", (x, target), (out,), name=self.namer(
                f"{self.base}_reshape")))
        return out


def _reordered(graph: Graph, flatten: Node, back: Node, namer: Namer
               ) -> tuple[list[Node], list[Node], list[Tensor]]:
    """The nodes replacing `flatten` and `back`, and their shape constants. Each row (a
    group: channels g*C/G .. (g+1)*C/G - 1 at every position) is read position-major,
    channel-minor: x channel-last [N, *S, C] (a view), for G > 1 regrouped [N, P, G, C/G] ->
    [N, G, P, C/G] (a copy); back the same way."""
    source, row = _shape(graph, flatten.inputs[0]), _shape(graph, flatten.outputs[0])
    assert source is not None and row is not None
    groups = _groups(source, row)
    assert groups is not None
    rank, positions = len(source), math.prod(source[2:])
    last_first = (0, *range(2, rank), 1)
    channels_last = tuple(source[i] for i in last_first)
    base = flatten.name or flatten.outputs[0]
    split = (source[0], positions, groups, source[1] // groups)
    into = _Steps(namer, base)
    x = into.transpose(flatten.inputs[0], last_first)
    if groups > 1:
        x = into.transpose(into.reshape(x, split), (0, 2, 1, 3))
    into.reshape(x, row, like=flatten, out=flatten.outputs[0])
    out = _Steps(namer, base)
    y = back.inputs[0]
    if groups > 1:
        y = out.transpose(out.reshape(y, (source[0], groups, positions, source[1] // groups)),
                          (0, 2, 1, 3))
    y = out.reshape(y, channels_last, like=back)
    out.transpose(y, (0, rank - 1, *range(1, rank - 1)), out=back.outputs[0])
    return into.nodes, out.nodes, into.constants + out.constants
