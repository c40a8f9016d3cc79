"""A softmax written out of its parts becomes one Softmax node (so SOFTMAX runs it).

Exporters that do not emit Softmax (jax2tf, some TensorFlow and hand-written graphs) write

    m = ReduceMax(x, last axis)            optional, with Max(m, -inf) around it (jax)
    e = Exp(x - m)                         or Exp(x) without the maximum
    y = e / ReduceSum(e, last axis)

Algebra: exp(x - m) / sum(exp(x - m)) = exp(x) / sum(exp(x)) = softmax(x) along the last
axis for any row constant m, so the whole chain is Softmax(x, axis = rank - 1) (an axis that
Softmax of every opset means the same: before opset 13 the 2-D coercion from the last axis
is that row). In float arithmetic the two differ by roundings only; after quantization the
model's result is compared with the float model, as for every float model.

Preconditions (else nothing changes): default-domain float nodes; both reductions over the
last axis only (attribute, or a constant input from opset 13 / 18), with keepdims = 1, or
keepdims = 0 followed by Unsqueeze / Reshape to [..., 1] and optionally an Expand to x's
shape (the broadcast jax writes back); the maximum's Max partner a scalar constant of -inf
(or at most -3.4e38); static shapes; every intermediate value read only inside the chain
(`e` by the ReduceSum and the Div) and none a graph output.
"""

from collections.abc import Mapping

import numpy as np

from systolic.ir import Graph, Model, Node
from systolic.mapper.passes.graph_tools import (
    attr_int,
    attr_ints,
    constants_of,
    make_node,
    replace_graph,
    splice,
    with_graph,
)
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["decomposed_softmax"]

_BROADCAST = frozenset({"Unsqueeze", "Reshape", "Expand"})
_LOWEST = -3.4e38


class _Chain:
    """A graph with its producers, readers and constants, for walking one candidate."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.producers = graph.producers()
        self.readers = graph.consumers()
        self.constants = constants_of(graph)
        self.outputs = {info.name for info in graph.outputs}

    def shape(self, name: str) -> tuple[int, ...] | None:
        found = self.graph.type_of(name)
        if found is None or found.shape is None or not found.is_static:
            return None
        return tuple(int(d) for d in found.shape if isinstance(d, int))

    def producer(self, name: str, *op_types: str) -> Node | None:
        """The default-domain producer of `name` when its type is one of `op_types` and
        `name` is read once and is no graph output."""
        node = self.producers.get(name)
        if node is None or node.domain != "" or node.op_type not in op_types:
            return None
        if name in self.outputs or len(self.readers.get(name, [])) != 1:
            return None
        return node


def decomposed_softmax(model: Model, report: PassReport) -> Model:
    """Return `model` with each decomposed softmax replaced by Softmax (module docstring)."""
    chain = _Chain(model.graph)
    replaced: dict[int, list[Node]] = {}
    removed: set[int] = set()
    for div in model.graph.nodes:
        if div.op_type != "Div" or div.domain != "" or id(div) in removed:
            continue
        found = _match(chain, div)
        if found is None:
            continue
        x, nodes = found
        rank = len(chain.shape(x) or ())
        softmax = make_node("Softmax", [x], div.outputs, name=div.name,
                            attrs={"axis": rank - 1})
        replaced[id(div)] = [softmax]
        removed.update(id(node) for node in nodes if node is not div)
        for node in nodes:
            report.record(node.label, FUSED, into=f"Softmax {div.label!r} (float)")
    if not replaced:
        return model
    return with_graph(model, replace_graph(model.graph,
                                           splice(model.graph.nodes, replaced, removed)))


def _match(chain: _Chain, div: Node) -> tuple[str, list[Node]] | None:
    """Return (x, the chain's nodes) when `div` ends a decomposed softmax, else None."""
    exp_out, sums = div.inputs[0], div.inputs[1]
    exp = chain.producers.get(exp_out)
    if exp is None or exp.op_type != "Exp" or exp.domain != "" or exp_out in chain.outputs:
        return None
    shape = chain.shape(exp_out)
    if shape is None or not shape or chain.shape(div.outputs[0]) != shape:
        return None
    reduce_sum, sum_path = _reduction(chain, sums, "ReduceSum", shape)
    if reduce_sum is None or reduce_sum.inputs[0] != exp_out:
        return None
    if sorted(id(r) for r in chain.readers.get(exp_out, [])) != sorted((id(div),
                                                                        id(reduce_sum))):
        return None
    nodes = [exp, *sum_path, reduce_sum, div]
    sub = chain.producer(exp.inputs[0], "Sub")
    if sub is None:
        return exp.inputs[0], nodes
    x = sub.inputs[0]
    reduce_max, max_path = _reduction(chain, sub.inputs[1], "ReduceMax", shape)
    if reduce_max is None or reduce_max.inputs[0] != x:
        return exp.inputs[0], nodes  # Exp of some difference: its Sub stays
    return x, [sub, *max_path, reduce_max, *nodes]


def _reduction(chain: _Chain, name: str, op_type: str,
               shape: tuple[int, ...]) -> tuple[Node | None, list[Node]]:
    """Walk back from `name` (a row statistic broadcast over rows of `shape`) through the
    broadcast nodes (and for ReduceMax a Max with -inf) to an `op_type` over the last axis;
    return it and the nodes passed, or (None, [])."""
    passed: list[Node] = []
    node = chain.producer(name, op_type, "Max", *_BROADCAST)
    while node is not None and node.op_type != op_type:
        if node.op_type == "Max" and (op_type != "ReduceMax"
                                      or any(n.op_type == "Max" for n in passed)):
            return None, []
        following = _follow(chain, node)
        if following is None:
            return None, []
        passed.append(node)
        node = chain.producer(following, op_type, "Max", *_BROADCAST)
    if node is None or not _over_last_axis(chain, node, shape):
        return None, []
    if not _broadcasts_rows(chain, node, passed, shape):
        return None, []
    return node, passed


def _follow(chain: _Chain, node: Node) -> str | None:
    """The data input of a broadcast node, or of Max(-inf, v); None if it is neither."""
    if node.op_type != "Max":
        return node.inputs[0]
    if len(node.inputs) != 2:
        return None
    for constant, other in (node.inputs, node.inputs[::-1]):
        value = chain.constants.get(constant)
        if value is not None and value.size == 1 and float(value.reshape(())) <= _LOWEST:
            return other
    return None


def _over_last_axis(chain: _Chain, node: Node, shape: tuple[int, ...]) -> bool:
    """True when the reduction `node` reduces exactly the last axis of a `shape` input."""
    if chain.shape(node.inputs[0]) != shape:
        return False
    if len(node.inputs) > 1 and node.inputs[1]:
        axes_value = chain.constants.get(node.inputs[1])
        if axes_value is None:
            return False
        axes = tuple(int(a) for a in axes_value.reshape(-1))
    else:
        axes = tuple(attr_ints(node, "axes") or ())
    rank = len(shape)
    return len(axes) == 1 and axes[0] % rank == rank - 1 and -rank <= axes[0] < rank


def _broadcasts_rows(chain: _Chain, reduction: Node, passed: list[Node],
                     shape: tuple[int, ...]) -> bool:
    """True when the statistic reaches the binary op as one value per row: [..., 1] (or
    `shape` after an Expand), with keepdims = 0 undone by Unsqueeze/Reshape to [..., 1]."""
    row_shape = (*shape[:-1], 1)
    keepdims = attr_int(reduction, "keepdims", 1)
    current = chain.shape(reduction.outputs[0])
    expected: Mapping[int, tuple[int, ...]] = {1: row_shape, 0: shape[:-1]}
    if current != expected.get(keepdims):
        return False
    for node in reversed(passed):  # from the reduction towards the binary op
        after = chain.shape(node.outputs[0])
        if node.op_type == "Expand":
            if current != row_shape or after not in (row_shape, shape):
                return False
        elif node.op_type in ("Unsqueeze", "Reshape") and (
                after is None or int(np.prod(after)) != int(np.prod(row_shape))):
            return False
        current = after
    return current in (row_shape, shape)
