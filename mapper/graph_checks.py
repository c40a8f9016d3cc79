"""Structural checks of a converted graph, as the IR specification requires them.

- single static assignment: every value has one definition (a graph input with a same-named
  initializer is one definition: the initializer is the input's default);
- every node input is defined (graph input, initializer or node output; "" is an omitted
  optional input) and every graph output is produced;
- the nodes form no cycle; nodes that are merely out of order are sorted (stably);
- names that are not C90 identifiers only draw a `NameWarning`.
"""

import re
import warnings
from collections.abc import Iterable

from systolic.errors import ModelError
from systolic.ir import Graph, Node, Tensor

__all__ = ["NameWarning", "check_graph", "warn_bad_names"]


class NameWarning(UserWarning):
    """A name in the model is not a C90 identifier, as the IR spec asks; the model still loads."""


_C90_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_graph(graph: Graph) -> Graph:
    """Return `graph` with its nodes in topological order, or raise ModelError naming the
    values or nodes that break single assignment, definition before use or acyclicity."""
    defined = _graph_definitions(graph)
    producer = _node_definitions(graph.nodes, defined)
    for node in graph.nodes:
        for name in node.inputs:
            if name and name not in defined and name not in producer:
                raise ModelError(
                    f"node {node.label!r} ({node.op_type}) reads {name!r}, which is not defined "
                    "by any graph input, initializer or node output: fix the model"
                )
    for output in graph.outputs:
        if output.name not in defined and output.name not in producer:
            raise ModelError(
                f"graph output {output.name!r} is not produced by any node, input or initializer"
            )
    ordered = _topological_order(graph.nodes, producer)
    if ordered != graph.nodes:
        return Graph(
            name=graph.name,
            inputs=graph.inputs,
            outputs=graph.outputs,
            nodes=ordered,
            initializers=graph.initializers,
            value_info=graph.value_info,
            doc=graph.doc,
        )
    return graph


def _graph_definitions(graph: Graph) -> dict[str, str]:
    """Map each graph input and initializer name to a description, checking uniqueness."""
    defined: dict[str, str] = {}
    for info in graph.inputs:
        if info.name in defined:
            raise ModelError(f"graph input {info.name!r} is listed twice: fix the model")
        defined[info.name] = "a graph input"
    initializers: set[str] = set()
    symbols: dict[str, tuple[int, str]] = {}
    for tensor in graph.initializers:
        if tensor.name in initializers:
            raise ModelError(f"initializer {tensor.name!r} is given twice: fix the model")
        initializers.add(tensor.name)
        if tensor.name in defined:
            _check_default(graph, tensor, symbols)
        else:
            defined[tensor.name] = "an initializer"
    return defined


def _check_default(graph: Graph, tensor: Tensor, symbols: dict[str, tuple[int, str]]) -> None:
    """An initializer named like a graph input is its default: the types must agree, and a
    dimension variable must get one size from all defaults (`symbols`: name -> size, input)."""
    name = tensor.name
    declared = next(info.type for info in graph.inputs if info.name == name)
    shape_ok = declared.shape is None or (
        len(declared.shape) == len(tensor.shape)
        and all(not isinstance(d, int) or d == s for d, s in zip(declared.shape, tensor.shape))
    )
    if declared.dtype != tensor.dtype or not shape_ok:
        raise ModelError(
            f"graph input {name!r} is declared {declared.text()} but its default initializer "
            f"is {tensor.type.text()}: fix the model"
        )
    for dim, size in zip(declared.shape or (), tensor.shape):
        if not isinstance(dim, str):
            continue
        if dim in symbols and symbols[dim][0] != size:
            first_size, first_input = symbols[dim]
            raise ModelError(
                f"dimension {dim!r} is {first_size} in the default of input {first_input!r} "
                f"but {size} in the default of input {name!r}: one name stands for one size"
            )
        symbols[dim] = (size, name)


def _node_definitions(nodes: Iterable[Node], defined: dict[str, str]) -> dict[str, Node]:
    producer: dict[str, Node] = {}
    for node in nodes:
        for name in node.outputs:
            if not name:
                continue
            if name in defined:
                raise ModelError(
                    f"value {name!r} is assigned twice: by {defined[name]} and by node "
                    f"{node.label!r} ({node.op_type}); ONNX graphs are in single static "
                    "assignment form: rename one"
                )
            if name in producer:
                first = producer[name]
                raise ModelError(
                    f"value {name!r} is assigned twice: by node {first.label!r} "
                    f"({first.op_type}) and by node {node.label!r} ({node.op_type}); ONNX graphs "
                    "are in single static assignment form: rename one"
                )
            producer[name] = node
    return producer


def _topological_order(nodes: tuple[Node, ...], producer: dict[str, Node]) -> tuple[Node, ...]:
    """Return the nodes in a topological order that keeps the given order where it can."""
    index_of = {id(node): index for index, node in enumerate(nodes)}
    waiting = [
        {index_of[id(producer[name])] for name in node.inputs if name in producer} for node in nodes
    ]
    users: dict[int, list[int]] = {}
    for index, deps in enumerate(waiting):
        for dep in deps:
            users.setdefault(dep, []).append(index)
    if all(max(deps, default=-1) < index for index, deps in enumerate(waiting)):
        return nodes
    remaining = [len(deps) for deps in waiting]
    ready = sorted(index for index, count in enumerate(remaining) if count == 0)
    order: list[int] = []
    while ready:
        current = ready.pop(0)
        order.append(current)
        for user in users.get(current, []):
            remaining[user] -= 1
            if remaining[user] == 0:
                ready.append(user)
                ready.sort()
    if len(order) != len(nodes):
        raise ModelError(_cycle_message(nodes, waiting, set(order)))
    return tuple(nodes[index] for index in order)


def _cycle_message(nodes: tuple[Node, ...], waiting: list[set[int]], done: set[int]) -> str:
    """Walk back from a node that never became ready until a node repeats: that is a cycle."""
    current = next(index for index in range(len(nodes)) if index not in done)
    path: list[int] = []
    while current not in path:
        path.append(current)
        current = min(dep for dep in waiting[current] if dep not in done)
    cycle = path[path.index(current) :]
    cycle.reverse()
    names = " -> ".join(repr(nodes[index].label) for index in (*cycle, cycle[0]))
    return f"the graph has a cycle through nodes {names}: ONNX graphs must be acyclic"


class C90NameWarning(NameWarning):
    """Names that only the C90 rule rejects ("/conv1/Conv", "onnx::Conv_12": what exporters
    write), harmless here: issued only when a warnings filter names this class, e.g.
    `warnings.simplefilter("always", C90NameWarning)` before `systolic.load(...)`."""


def warn_bad_names(graph: Graph) -> None:
    """Warn once about the names (values, nodes, dimension variables) that are not C90
    identifiers: a NameWarning for those holding whitespace or unprintable characters (they
    garble reports), a C90NameWarning, off unless a filter asks for it, for the others."""
    names: list[str] = []
    seen: set[str] = set()

    def visit(name: str | None) -> None:
        if name and name not in seen:
            seen.add(name)
            if not _C90_IDENTIFIER.fullmatch(name):
                names.append(name)

    for info in (*graph.inputs, *graph.outputs, *graph.value_info):
        visit(info.name)
        for dim in info.type.shape or ():
            if isinstance(dim, str):
                visit(dim)
    for tensor in graph.initializers:
        visit(tensor.name)
    for node in graph.nodes:
        visit(node.name)
        for name in (*node.inputs, *node.outputs):
            visit(name)
    garbled = [n for n in names if not n.isprintable() or any(c.isspace() for c in n)]
    rest = [n for n in names if n not in garbled]
    asked = any(action != "ignore" and isinstance(kind, type) and issubclass(kind, C90NameWarning)
                for action, _, kind, *_ in warnings.filters)  # fmt: skip
    for category, group in ((NameWarning, garbled), (C90NameWarning, rest if asked else [])):
        if group:
            shown = ", ".join(repr(name) for name in group[:3])
            more = f" and {len(group) - 3} more" if len(group) > 3 else ""
            warnings.warn(category(f"{len(group)} name(s) are not C90 identifiers as the ONNX "
                                   f"IR asks: {shown}{more}"), stacklevel=3)  # fmt: skip
