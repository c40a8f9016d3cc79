"""What a fusion pass needs to know about a graph while it matches patterns: constants,
producers, consumers, static types, fresh names; and the bookkeeping of a rewrite (nodes
replaced at a position, nodes removed, new constants)."""

from collections.abc import Iterable

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, DataType, Graph, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, constants_of, make_node, replace_graph, tensor
from systolic.mapper.passes.quant_params import NotFusable

__all__ = ["FusionContext"]


class FusionContext:
    """A graph being rewritten by one pass. Matches read the original graph; `replace`
    schedules a rewrite; `result` builds the new graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.constants = constants_of(graph)
        self.producers = graph.producers()
        self.consumers = graph.consumers()
        self.outputs = {info.name for info in graph.outputs}
        self.namer = Namer(graph)
        self._index = {id(node): i for i, node in enumerate(graph.nodes)}
        self._removed: set[int] = set()
        self._inserted: dict[int, list[Node]] = {}
        self._constants: list[Tensor] = []

    # -- reading ---------------------------------------------------------------------------

    def shape_of(self, name: str) -> tuple[int, ...] | None:
        """Return the static shape of value `name`, or None when it is not known."""
        if name in self.constants:
            return tuple(int(d) for d in self.constants[name].shape)
        found = self.graph.type_of(name)
        if found is None or found.shape is None or not found.is_static:
            return None
        return tuple(int(d) for d in found.shape if isinstance(d, int))

    def dtype_of(self, name: str) -> DataType | None:
        found = self.graph.type_of(name)
        return None if found is None else found.dtype

    def producer(self, name: str, op_type: str) -> Node | None:
        """Return the node of type `op_type` (default domain) producing `name`, or None."""
        node = self.producers.get(name)
        if node is None or node.op_type != op_type or node.domain != "":
            return None
        return node

    def sole_reader(self, name: str) -> Node:
        """Return the only node reading `name`; raise NotFusable when there are others or
        when it is a graph output."""
        readers = self.consumers.get(name, [])
        if name in self.outputs:
            raise NotFusable(f"{name!r} is a graph output")
        if len(readers) != 1:
            raise NotFusable(f"{name!r} has {len(readers)} readers")
        return readers[0]

    def is_scheduled(self, node: Node) -> bool:
        return id(node) in self._removed

    # -- writing ---------------------------------------------------------------------------

    def constant(self, base: str, value: np.ndarray) -> str:
        """Add a new constant; return its name."""
        name = self.namer(base)
        self._constants.append(tensor(name, value))
        self.constants[name] = value
        return name

    def systolic_node(self, op_type: str, inputs: Iterable[str], output: str, name: str,
                      attrs: dict[str, object]) -> Node:
        return make_node(op_type, inputs, (output,), name=name, domain=SYSTOLIC_DOMAIN,
                         version=1, attrs=attrs)  # type: ignore[arg-type]

    def replace(self, removed: Iterable[Node], new_node: Node, at: Node) -> None:
        """Remove `removed` and put `new_node` where `at` (one of them) stood."""
        for node in removed:
            self._removed.add(id(node))
        self._inserted.setdefault(self._index[id(at)], []).append(new_node)

    def result(self) -> Graph:
        nodes: list[Node] = []
        for i, node in enumerate(self.graph.nodes):
            nodes += self._inserted.get(i, [])
            if id(node) not in self._removed:
                nodes.append(node)
        return replace_graph(self.graph, nodes, self._constants)
