"""Fold a constant scalar Mul after an embedding Gather into the Gather's table (float).

Decoder LLMs and sequence-to-sequence encoders scale their token embeddings right after the
lookup: Gemma multiplies by sqrt(hidden), BART by its embed_scale. The lookup, a Gather of a
constant table by computed token ids, runs on the host (no indexed LOAD), and the Mul of its
float rows is no function of one dequantized 8-bit tensor, so it stayed on the host too. With
a float constant table T and a one-element float constant s,

    Mul(Gather(T, ids, axis), s) = Gather(T * s, ids, axis)

bit for bit: each output element is the same IEEE product T[i] * s, computed once per table
element instead of once per looked-up element (the Mul's operands in either order).

Preconditions: the Gather is ai.onnx with a constant table of a float type; s is a constant of
one element of that type whose rank is at most the Gather output's (it does not broadcast the
result up); the Gather's output has the Mul as its only reader and is not a graph output.
The Gather then reads the new table T * s and writes the Mul's output; the Mul is gone
(recorded as fused into the Gather). The original table stays while something else reads it
(a tied output projection); `eliminate_dead` drops it otherwise. Otherwise nothing changes.
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Model, Node
from systolic.mapper.passes.graph_tools import Namer, constants_of, replace_graph, splice, tensor
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["embedding_scale"]


def embedding_scale(model: Model, report: PassReport) -> Model:
    """Return `model` with every such scalar Mul (module docstring) folded into its Gather's
    table; `model` itself when there is none."""
    graph = model.graph
    constants, producers, consumers = constants_of(graph), graph.producers(), graph.consumers()
    outputs = {info.name for info in graph.outputs}
    namer = Namer(graph)
    replaced: dict[int, list[Node]] = {}
    removed: set[int] = set()
    added = []
    for mul in graph.nodes:
        match = _match(graph, mul, producers, constants)
        if match is None:
            continue
        gather, scale = match
        looked_up = gather.outputs[0]
        if id(gather) in replaced or looked_up in outputs or len(consumers.get(looked_up, [])) != 1:
            continue
        table = constants[gather.inputs[0]]
        name = namer(f"{gather.inputs[0]}_scaled")
        added.append(tensor(name, (table * scale).astype(table.dtype)))
        replaced[id(gather)] = [dataclasses.replace(
            gather, inputs=(name, *gather.inputs[1:]), outputs=mul.outputs)]
        removed.add(id(mul))
        report.record(mul.label, FUSED, into=f"the table of Gather {gather.label!r} (float)")
    if not removed:
        return model
    return dataclasses.replace(
        model, graph=replace_graph(graph, splice(graph.nodes, replaced, removed), added))


def _match(graph: Graph, mul: Node, producers: dict[str, Node],
           constants: dict[str, np.ndarray]) -> tuple[Node, np.ndarray] | None:
    """(the Gather, the scale as a 0-d array of the table's type) when `mul` folds, else None."""
    if mul.op_type != "Mul" or mul.domain != "" or len(mul.inputs) != 2:
        return None
    for looked_up, factor in (mul.inputs, mul.inputs[::-1]):
        gather = producers.get(looked_up)
        if gather is None or gather.op_type != "Gather" or gather.domain != "":
            continue
        table, scale = constants.get(gather.inputs[0]), constants.get(factor)
        if table is None or scale is None or table.dtype.kind != "f" or scale.size != 1:
            continue
        result = graph.type_of(looked_up)
        if scale.dtype != table.dtype or result is None or result.shape is None \
                or scale.ndim > len(result.shape):
            continue
        return gather, scale.reshape(())
    return None
