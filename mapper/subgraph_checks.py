"""Structural checks of subgraphs (If's branches), as the IR specification scopes names.

A subgraph may read any name of the graphs it is nested in (the IR lists those reads as the
node's captures, `Node.captures`, so the outer graph's own checks see them defined, bound to
the branch's names by position). Inside,
the subgraph follows the rules of a graph (`mapper.graph_checks.check_graph`: single
assignment, definition before use, acyclicity), and, as IR.md says for nested subgraphs, "a
node output name MUST be distinct from the names from the outer scopes that are visible in the
nested subgraph": no node output may shadow an outer name. The spec says this of node
outputs only; a branch initializer named like an outer value is refused too, since runtimes
disagree on which one the branch reads (onnx's ReferenceEvaluator and onnxruntime read the
outer value when the outer graph uses it, onnxruntime the branch's own otherwise).
"""

import dataclasses

from systolic.errors import ModelError
from systolic.ir import (
    Attrs,
    AttrValue,
    DataType,
    Graph,
    Node,
    TensorType,
    ValueInfo,
    outer_names,
)
from systolic.mapper.graph_checks import check_graph

__all__ = ["check_subgraphs", "defined_names"]

_ANY = TensorType(DataType.FLOAT, None)
"""A placeholder type for outer names while checking a subgraph's structure."""


def defined_names(graph: Graph) -> set[str]:
    """Return the names `graph` defines itself: inputs, initializers and node outputs."""
    names = {info.name for info in graph.inputs} | {t.name for t in graph.initializers}
    names.update(name for node in graph.nodes for name in node.outputs if name)
    return names


def check_subgraphs(graph: Graph, outer: frozenset[str] = frozenset()) -> Graph:
    """Return `graph` with every subgraph (at any depth) checked and its nodes in topological
    order; raise ModelError naming the node, attribute and value that break a rule. `outer`:
    the names visible from the graphs `graph` is nested in."""
    if not any(node.subgraphs for node in graph.nodes):
        return graph
    visible = outer | defined_names(graph)
    nodes = tuple(_check_node(node, visible) for node in graph.nodes)
    return dataclasses.replace(graph, nodes=nodes)


def _check_node(node: Node, visible: frozenset[str]) -> Node:
    if not node.subgraphs:
        return node
    attrs: dict[str, AttrValue] = {}
    for name, value in node.attrs.items():
        if isinstance(value, Graph):
            attrs[name] = _check_one(value, f"the {name} of node {node.label!r} "
                                     f"({node.op_type})", visible)
        else:
            attrs[name] = value
    return dataclasses.replace(node, attrs=Attrs(attrs))


def _check_one(subgraph: Graph, where: str, visible: frozenset[str]) -> Graph:
    for tensor in subgraph.initializers:
        if tensor.name in visible:
            raise ModelError(
                f"initializer {tensor.name!r} of {where} has the name of an outer value, and "
                "runtimes disagree on which one the branch reads: rename it"
            )
    for node in subgraph.nodes:
        for name in node.outputs:
            if name in visible:
                raise ModelError(
                    f"node {node.label!r} ({node.op_type}) in {where} assigns {name!r}, a name "
                    "of an outer graph; a subgraph's node outputs must not shadow outer names "
                    "(ONNX IR, nested subgraphs): rename it"
                )
    # The outer names it reads are the node's captures, which the outer graph's own check
    # finds defined (under their names there: inlining a function renames them).
    placeholders = tuple(ValueInfo(name, _ANY) for name in outer_names(subgraph))
    checked = check_graph(dataclasses.replace(subgraph, inputs=subgraph.inputs + placeholders))
    checked = dataclasses.replace(checked, inputs=subgraph.inputs)
    return check_subgraphs(checked, visible)
