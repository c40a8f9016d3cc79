"""Small helpers the passes share to read and rebuild frozen graphs: constants, producers
and consumers, fresh names, and value renaming."""

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from systolic.ir import Attrs, AttrValue, DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.constant_layout import c_contiguous

__all__ = [
    "Namer",
    "attr_float",
    "attr_int",
    "attr_ints",
    "attr_str",
    "constants_of",
    "make_node",
    "rename_inputs",
    "replace_graph",
    "scalar_constant",
    "splice",
    "subgraph_namer",
    "with_graph",
]


def constants_of(graph: Graph) -> dict[str, np.ndarray]:
    """Return the graph's constant values by name: its initializers (an initializer that is
    also a graph input counts as a constant: the mapper freezes the default)."""
    return {tensor.name: tensor.data for tensor in graph.initializers}


def scalar_constant(constants: Mapping[str, np.ndarray], name: str) -> np.ndarray | None:
    """Return constant `name` when it holds exactly one element, else None."""
    value = constants.get(name) if name else None
    if value is None or value.size != 1:
        return None
    return value.reshape(())


class Namer:
    """Hands out value and node names not used anywhere in a graph."""

    def __init__(self, graph: Graph) -> None:
        taken = {t.name for t in graph.initializers}
        taken.update(info.name for info in (*graph.inputs, *graph.outputs))
        for node in graph.nodes:
            taken.update((node.name, *node.inputs, *node.outputs))
        self._taken = taken

    def __call__(self, base: str) -> str:
        name, index = base, 1
        while name in self._taken:
            name = f"{base}_{index}"
            index += 1
        self._taken.add(name)
        return name


def subgraph_namer(graph: Graph) -> Namer:
    """Return a Namer that also avoids every name inside the graph's subgraphs, at any depth."""
    namer = Namer(graph)
    pending = [sub for node in graph.nodes for _, sub in node.subgraphs]
    while pending:
        sub = pending.pop()
        for name in _names_of(sub):
            namer(name)  # (reserves it)
        pending += [inner for node in sub.nodes for _, inner in node.subgraphs]
    return namer


def _names_of(graph: Graph) -> set[str]:
    names = {t.name for t in graph.initializers}
    names.update(info.name for info in (*graph.inputs, *graph.outputs))
    for node in graph.nodes:
        names.update((node.name, *node.inputs, *node.outputs))
    names.discard("")
    return names


def make_node(
    op_type: str,
    inputs: Iterable[str],
    outputs: Iterable[str],
    *,
    name: str,
    domain: str = "",
    version: int = 0,
    attrs: Mapping[str, AttrValue] | None = None,
) -> Node:
    """Return a node (version 0 binds at the model's opset when the graph is rebound)."""
    return Node(op_type, tuple(inputs), tuple(outputs), domain=domain, version=version,
                name=name, attrs=Attrs(dict(attrs or {})))


def rename_inputs(node: Node, mapping: Mapping[str, str]) -> Node:
    """Return `node` reading mapping[name] instead of each renamed input."""
    if not any(name in mapping for name in node.inputs):
        return node
    return dataclasses.replace(node, inputs=tuple(mapping.get(n, n) for n in node.inputs))


def replace_graph(
    graph: Graph,
    nodes: Iterable[Node],
    new_constants: Iterable[Tensor] = (),
    *,
    drop_constants: Iterable[str] = (),
) -> Graph:
    """Return `graph` with new nodes, extra initializers, some initializers dropped; inputs
    that were only initializer defaults and are dropped disappear from the inputs too."""
    dropped = set(drop_constants)
    added = list(new_constants)
    added_names = {t.name for t in added}
    initializers = tuple(t for t in graph.initializers
                         if t.name not in dropped and t.name not in added_names) + tuple(added)
    inputs = tuple(info for info in graph.inputs if info.name not in dropped)
    return dataclasses.replace(graph, nodes=tuple(nodes), initializers=initializers,
                               inputs=inputs)


def splice(
    nodes: Iterable[Node], replacements: Mapping[int, Sequence[Node]],
    removed: AbstractSet[int],
) -> tuple[Node, ...]:
    """Return `nodes` in order with each node whose id is in `replacements` replaced by its
    nodes there, and the nodes whose id is in `removed` left out."""
    return tuple(new for old in nodes if id(old) not in removed
                 for new in replacements.get(id(old), (old,)))


def with_graph(model: Model, graph: Graph) -> Model:
    return dataclasses.replace(model, graph=graph)


def tensor(name: str, value: np.ndarray) -> Tensor:
    """Return a constant tensor holding `value` (a read-only copy unless `value` is a
    read-only contiguous array, or a repeated-value view: `constant_layout`), of `value`'s
    shape: a scalar stays 0-D (`np.ascontiguousarray` would make it [1])."""
    data = c_contiguous(value)
    if data is not value and data.flags.writeable and not np.may_share_memory(data, value):
        data.flags.writeable = False  # a fresh copy nobody else holds: no second copy
    return Tensor(name, DataType.from_numpy(value.dtype), data)


def attr_int(node: Node, name: str, default: int) -> int:
    """Return integer attribute `name` of `node` (or `default`)."""
    value = node.attrs.get(name, default)
    return int(value) if isinstance(value, (int, float)) else default


def attr_float(node: Node, name: str, default: float) -> float:
    """Return float attribute `name` of `node` (or `default`)."""
    value = node.attrs.get(name, default)
    return float(value) if isinstance(value, (int, float)) else default


def attr_str(node: Node, name: str, default: str) -> str:
    """Return string attribute `name` of `node` (or `default`)."""
    value = node.attrs.get(name, default)
    return value if isinstance(value, str) else default


def attr_ints(node: Node, name: str) -> tuple[int, ...] | None:
    """Return integer-list attribute `name` of `node`, or None when it is not set."""
    value = node.attrs.get(name)
    if isinstance(value, tuple):
        return tuple(int(v) for v in value if isinstance(v, int))
    return None
