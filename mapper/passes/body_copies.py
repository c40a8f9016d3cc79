"""What unroll_loop and unroll_scan share: the pass's walk over the graph (`unroll_each`),
copies of a body in the main graph and the stacking of per-iteration values into a scan
output."""

import dataclasses
from collections.abc import Callable

import numpy as np

from systolic.ir import Attrs, Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, make_node, subgraph_namer, tensor
from systolic.mapper.passes.report import FOLDED, PassReport

__all__ = ["Unrolled", "Unroller", "copy_body", "stack_values", "unroll_each"]

Unrolled = tuple[list[Node], list[Tensor], str]
"""The nodes and new constants that replace an unrolled node, and the report's reason."""

Unroller = Callable[[Node, Namer, int], Unrolled | str | None]
"""Called with a node, the namer and the model's default-domain opset: its `Unrolled`, or
why the node stays (a note), or None for a node it does not unroll."""


def unroll_each(model: Model, report: PassReport, unroll: Unroller) -> Model:
    """Return `model` with each node that `unroll` unrolls replaced by its copies (recorded as
    folded with the reason `unroll` gives; a refusal noted); `model` itself when nothing
    changed."""
    graph = model.graph
    namer = subgraph_namer(graph)
    opset = dict(model.opsets).get("", 0)
    nodes: list[Node] = []
    tensors: list[Tensor] = []
    for node in graph.nodes:
        done = unroll(node, namer, opset)
        if isinstance(done, str):
            report.note(node.label, done)
        if not isinstance(done, tuple):
            nodes.append(node)
            continue
        unrolled, added, reason = done
        nodes += unrolled
        tensors += added
        report.record(node.label, FOLDED, reason=reason)
    if not tensors and len(nodes) == len(graph.nodes) and all(
            a is b for a, b in zip(nodes, graph.nodes, strict=True)):  # fmt: skip
        return model
    new_graph = dataclasses.replace(graph, nodes=tuple(nodes),
                                    initializers=graph.initializers + tuple(tensors))
    return dataclasses.replace(model, graph=new_graph)


def copy_body(body: Graph, rename: dict[str, str], namer: Namer, prefix: str) -> list[Node]:
    """One copy of the body's nodes, reading and writing names through `rename` (which it
    extends with the fresh names of the node outputs)."""
    copies = []
    for inner in body.nodes:
        for name in inner.outputs:
            if name:
                rename[name] = namer(f"{prefix}/{name}")
        copies.append(dataclasses.replace(
            inner, name=namer(f"{prefix}/{inner.name or inner.op_type}"),
            inputs=tuple(rename.get(n, n) if n else "" for n in inner.inputs),
            outputs=tuple(rename[n] if n else "" for n in inner.outputs),
            attrs=Attrs(dict(inner.attrs))))
    return copies


def stack_values(names: list[str], target: str, axis: int, namer: Namer, prefix: str,
                 opset: int) -> tuple[list[Node], list[Tensor]]:
    """Concat of the values (in order) along `axis`, each given that new axis of size 1
    first (Unsqueeze: axes as an input from opset 13, an attribute before); `axis` >= 0."""
    nodes, tensors, parts = [], [], []
    axes_name = namer(f"{prefix}/axes{axis}")
    if opset >= 13:
        tensors.append(tensor(axes_name, np.array([axis], np.int64)))
    for name in names:
        part = namer(f"{prefix}/{target}_part")
        inputs, attrs = ([name, axes_name], {}) if opset >= 13 else ([name], {"axes": (axis,)})
        nodes.append(make_node("Unsqueeze", inputs, [part], name=namer(f"{prefix}/unsqueeze"),
                               attrs=attrs))
        parts.append(part)
    nodes.append(make_node("Concat", parts, [target], name=namer(f"{prefix}/stack_{target}"),
                           attrs={"axis": axis}))
    return nodes, tensors
