"""Dead code elimination: drop nodes whose outputs nobody reads (and that are not graph
outputs), then constants nobody reads."""

import dataclasses

from systolic.ir import Model
from systolic.mapper.passes.report import REMOVED, PassReport

__all__ = ["eliminate_dead"]


def eliminate_dead(model: Model, report: PassReport) -> Model:
    """Return `model` without unread nodes and initializers."""
    graph = model.graph
    wanted = {info.name for info in graph.outputs}
    nodes = list(graph.nodes)
    live = [True] * len(nodes)
    needed = set(wanted)
    for index in range(len(nodes) - 1, -1, -1):  # reverse topological order
        node = nodes[index]
        if any(out and out in needed for out in node.outputs):
            needed.update(name for name in node.inputs if name)
        else:
            live[index] = False
            report.record(node.label, REMOVED,
                          reason="its result is no longer read (absorbed by fused ops)")
    kept = tuple(node for node, alive in zip(nodes, live, strict=True) if alive)
    initializers = tuple(t for t in graph.initializers if t.name in needed)
    kept_names = {t.name for t in initializers}
    frozen = {t.name for t in graph.initializers}
    inputs = tuple(info for info in graph.inputs
                   if info.name not in frozen or info.name in kept_names)
    new_graph = dataclasses.replace(graph, nodes=kept, initializers=initializers, inputs=inputs)
    return dataclasses.replace(model, graph=new_graph)
