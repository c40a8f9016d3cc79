"""Give every node a unique name (its label, made unique), so that the report can follow
original nodes through passes that rename values."""

import dataclasses

from systolic.ir import Model

__all__ = ["name_nodes"]


def name_nodes(model: Model) -> Model:
    """Return `model` with every node named; named nodes keep their name unless repeated."""
    taken: set[str] = set()
    nodes = []
    for node in model.graph.nodes:
        base = node.label
        name, index = base, 1
        while name in taken:
            name = f"{base}_{index}"
            index += 1
        taken.add(name)
        nodes.append(node if name == node.name else dataclasses.replace(node, name=name))
    return dataclasses.replace(model, graph=dataclasses.replace(model.graph, nodes=tuple(nodes)))
