"""Which values the memory plan stores channel-last and which row-major (`MemoryPlan.spatial`
and `.matrix`), decided for the whole graph before anything is placed.

The vector unit pairs element i of A, B and Y of an element-wise op (QAdd, QMul, QTable) only
when they are stored alike, so the values such ops connect form one *layout group* (A, B and
Y of a QAdd/QMul, X and Y of a QTable; a fixed point over the graph). A B broadcast per channel
or along the last axis is a vector the lowering reads by its strides in any layout: it joins no
group (a gamma shared by two unrelated ops would otherwise tie their groups). Each group is stored
one way, chosen by what its members need, strongest first:

1. **channel-last** when a convolution or pooling (`SPATIAL_OPS`) reads or writes a member:
   the group joins `spatial` (rank 3 and 4 channel-last);
2. **row-major** when a matrix op (`ROW_MAJOR_OPS`: QMatMul's A, computed B and Y, QSoftmax's
   and QLayerNorm's X and Y) touches a member, when the group is the A and Y of a QAdd/QMul
   whose B lies along the last axis (LayerNorm's gamma), or when a pure layout op
   (`PASS_LAYOUT`: heads split and merged by Reshape and Transpose) connects it to a row-major
   value: the group joins `matrix` (rank 4 row-major);
3. **channel-last** when it is the A and Y of a QAdd/QMul whose B is per channel (a batch
   norm's or group norm's scale and shift) and nothing above asks otherwise: rank 3 joins
   `spatial` too, so the channels are the scratchpad lanes;
4. otherwise the defaults (`memory_plan.is_channel_last`: rank 4 channel-last, rank 3
   row-major).

A group that needs both 1 and 2 stays channel-last (1 wins, as before groups existed): the
element-wise op whose operands then differ runs on the host with `check_same_layout`'s reason.
"""

import dataclasses
from collections.abc import Iterable

from systolic.ir import SYSTOLIC_DOMAIN, Graph, Node
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast, per_channel_broadcast

__all__ = ["PASS_LAYOUT", "ROW_MAJOR_OPS", "SPATIAL_OPS", "LayoutSets", "layout_sets"]

SPATIAL_OPS = frozenset({"QConv", "QConvInt", "QMaxPool", "QAveragePool"})
"""Systolic ops that read and write pixels of channels (channel-last)."""

ROW_MAJOR_OPS = frozenset({"QMatMul", "QMatMulInt", "QSoftmax", "QLayerNorm"})
"""Systolic ops whose operands and results are matrices (rows contiguous, row-major)."""

PASS_LAYOUT = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity"})
"""Layout ops a row-major layout is carried through (so they stay views or re-interpretations)."""

_PAIRED = frozenset({"QAdd", "QMul", "QTable"})


@dataclasses.dataclass(frozen=True)
class LayoutSets:
    """The values stored channel-last at rank 3 (`spatial`) and row-major at rank 4 (`matrix`);
    disjoint."""

    spatial: frozenset[str]
    matrix: frozenset[str]


class _Groups:
    """Union-find over value names."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        root = name
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while name != root:
            self.parent[name], name = root, self.parent.get(name, name)
        return root

    def union(self, names: Iterable[str]) -> None:
        roots = [self.find(n) for n in names]
        for root in roots[1:]:
            if root != roots[0]:
                self.parent[root] = roots[0]


def _shape(graph: Graph, name: str) -> tuple[int, ...] | None:
    t = graph.type_of(name)
    if t is None or t.shape is None or not t.is_static:
        return None
    return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]


def _broadcast(graph: Graph, node: Node) -> str | None:
    """"channel" / "last" for a QAdd/QMul whose B is per channel / along the last axis of A,
    else None (one shape, unknown shapes, a QTable)."""
    if node.op_type == "QTable" or len(node.inputs) < 2:
        return None
    a, b = _shape(graph, node.inputs[0]), _shape(graph, node.inputs[1])
    if a is None or b is None or a == b:
        return None
    if per_channel_broadcast(a, b):
        return "channel"
    return "last" if last_axis_broadcast(a, b) else None


def _paired_nodes(graph: Graph) -> list[Node]:
    return [n for n in graph.nodes if n.domain == SYSTOLIC_DOMAIN and n.op_type in _PAIRED]


def _group_values(graph: Graph, groups: _Groups) -> None:
    """Union A, B and Y of each QAdd/QMul (not a broadcast B: a vector read by strides either
    way, which a shared constant would otherwise tie to unrelated groups), X and Y of each
    QTable."""
    for node in _paired_nodes(graph):
        whole_b = node.op_type != "QTable" and _broadcast(graph, node) is None
        operands = node.inputs[:2] if whole_b else node.inputs[:1]
        groups.union(n for n in (*operands, node.outputs[0]) if n)


def _touched(graph: Graph, ops: frozenset[str], operands: int) -> set[str]:
    """The non-constant values among the first `operands` inputs and the output of `ops`."""
    return {
        name
        for node in graph.nodes
        if node.domain == SYSTOLIC_DOMAIN and node.op_type in ops
        for name in (*node.inputs[:operands], node.outputs[0])
        if name and graph.initializer(name) is None
    }


def _broadcast_operands(graph: Graph, form: str) -> set[str]:
    """A and Y of the QAdd/QMul nodes whose B broadcasts as `form`."""
    return {name for node in _paired_nodes(graph) if _broadcast(graph, node) == form
            for name in (node.inputs[0], node.outputs[0])}  # fmt: skip


def layout_sets(graph: Graph) -> LayoutSets:
    """Return the layout sets of `graph` (module docstring)."""
    groups = _Groups()
    _group_values(graph, groups)
    spatial_roots = {groups.find(n) for n in _touched(graph, SPATIAL_OPS, 1)}
    seeds = _touched(graph, ROW_MAJOR_OPS, 2) | _broadcast_operands(graph, "last")
    row_roots = {groups.find(n) for n in seeds} - spatial_roots
    layouts = [n for n in graph.nodes if n.domain == "" and n.op_type in PASS_LAYOUT]
    changed = True
    while changed:
        changed = False
        for node in layouts:
            pair = {groups.find(node.inputs[0]), groups.find(node.outputs[0])}
            if pair & row_roots and not pair <= row_roots and not pair & spatial_roots:
                row_roots |= pair
                changed = True
    channel_roots = {groups.find(n) for n in _broadcast_operands(graph, "channel")} - row_roots
    spatial_roots |= channel_roots
    names = {n for node in graph.nodes for n in (*node.inputs, *node.outputs) if n}
    spatial = frozenset(n for n in names if groups.find(n) in spatial_roots)
    matrix = frozenset(n for n in names if groups.find(n) in row_roots)
    return LayoutSets(spatial, matrix)
