"""Remove nodes that compute nothing at inference: Identity, Dropout whose mask output is
unused (inference mode: the output is the input), and Cast to the type its input already has
(exporters write float -> float Casts around slices; a Cast is exact when nothing changes).

Readers of the removed node's output read its input instead. When that output is a graph
output, the node producing the input is renamed to write the graph output directly (when the
input is itself a graph input or a constant, the node stays).
"""

import dataclasses

from systolic.ir import Graph, Model, Node
from systolic.mapper.passes.graph_tools import attr_int
from systolic.mapper.passes.report import REMOVED, PassReport

__all__ = ["remove_identities"]


def _passes_through(node: Node, read: set[str], graph: Graph) -> bool:
    """True for Identity, Dropout whose mask output nobody reads, and a Cast to its input's
    own element type."""
    if node.op_type == "Identity" and node.domain == "":
        return True
    if node.op_type == "Cast" and node.domain == "" and node.inputs:
        found = graph.type_of(node.inputs[0])
        return found is not None and attr_int(node, "to", 0) == int(found.dtype)
    if node.op_type == "Dropout" and node.domain == "":
        return len(node.outputs) < 2 or not node.outputs[1] or node.outputs[1] not in read
    return False


def remove_identities(model: Model, report: PassReport) -> Model:
    """Return `model` without Identity, mask-less Dropout and same-type Cast nodes."""
    graph = model.graph
    outputs = {info.name for info in graph.outputs}
    inputs = {info.name for info in graph.inputs} | {t.name for t in graph.initializers}
    nodes = list(graph.nodes)
    read = {name for node in nodes for name in node.inputs} | outputs
    alias: dict[str, str] = {}  # removed output -> the value it equals
    rename_output: dict[str, str] = {}  # producer output -> graph output name
    kept: list[Node] = []
    for node in nodes:
        node = dataclasses.replace(node, inputs=tuple(alias.get(n, n) for n in node.inputs))
        if not _passes_through(node, read, graph) or not node.inputs or not node.inputs[0]:
            kept.append(node)
            continue
        source, target = node.inputs[0], node.outputs[0]
        if target in outputs:
            if source in inputs or source in outputs or source in rename_output:
                kept.append(node)
                continue
            rename_output[source] = target
            alias_back = target
            kept = [_rename_output(k, source, alias_back) for k in kept]
            alias[source] = target
        else:
            alias[target] = source
        report.record(node.label, REMOVED, reason=f"{node.op_type} is the identity at inference")
    kept = [dataclasses.replace(k, inputs=tuple(alias.get(n, n) for n in k.inputs))
            for k in kept]
    return dataclasses.replace(model, graph=dataclasses.replace(graph, nodes=tuple(kept)))


def _rename_output(node: Node, old: str, new: str) -> Node:
    if old not in node.outputs:
        return node
    return dataclasses.replace(node, outputs=tuple(new if o == old else o for o in node.outputs))
