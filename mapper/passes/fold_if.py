"""Fold an If whose condition is a constant into the nodes of the branch it chooses.

If(cond, captures...) with cond a constant (after fold_constants: a shape chain such as
Shape -> ReduceProd -> Equal folds to one) always runs the same branch, so it equals that
branch's nodes placed in the main graph: y_i = branch output i. The branch's own names (node
outputs, initializers, node names) get fresh names of the main graph ("<if>/<name>"); the
outer names it reads become the If's inputs standing for them (`Node.captures`, by position,
so a pass that renamed those inputs is followed); each branch output reaches the If's output
through an Identity, which remove_identities then drops. The inlined nodes are then mapped like
any other (a Conv of the chosen branch runs on the array). Preconditions: the node is
ai.onnx If and its cond is a one-element constant; otherwise the If stays (on the host,
choosing its branch when it runs).
"""

import dataclasses
import math

from systolic.ir import Attrs, Graph, Model, Node, Tensor, TensorType
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    scalar_constant,
    subgraph_namer,
)
from systolic.mapper.passes.report import FOLDED, PassReport

__all__ = ["HOST_REASON", "fold_if", "selector_inputs_of"]

HOST_REASON = ("its cond is known only when running (it depends on the input's values): runs "
               "on the host, which runs the chosen branch with the reference")


def fold_if(model: Model, report: PassReport) -> Model:
    """Return `model` with every If of constant condition replaced by its chosen branch's
    nodes; `model` itself when there is none."""
    graph = model.graph
    constants = constants_of(graph)
    namer = subgraph_namer(graph)
    nodes: list[Node] = []
    tensors: list[Tensor] = []
    for node in graph.nodes:
        cond = scalar_constant(constants, node.inputs[0]) if _is_if(node) else None
        if cond is None:
            if _is_if(node):
                report.note(node.label, _host_reason(graph, node.inputs[0]))
            nodes.append(node)
            continue
        which = "then_branch" if bool(cond) else "else_branch"
        branch = node.attrs[which]
        assert isinstance(branch, Graph)
        inlined, constants_added = _inline(node, branch, namer)
        nodes += inlined
        tensors += constants_added
        report.record(node.label, FOLDED, reason=f"cond is constant: its {which}'s "
                      f"{len(branch.nodes)} node(s) run in the main graph as '{node.label}/...'")
    if len(nodes) == len(graph.nodes) and not tensors and all(
            a is b for a, b in zip(nodes, graph.nodes, strict=True)):  # fmt: skip
        return model
    new_graph = dataclasses.replace(graph, nodes=tuple(nodes),
                                    initializers=graph.initializers + tuple(tensors))
    return dataclasses.replace(model, graph=new_graph)


def selector_inputs_of(graph: Graph, cond: str) -> list[str]:
    """Return the graph inputs of integer or bool type with at most one element that value
    `cond` is computed from (a sample rate, a mode), in input order."""
    computed_from = _ancestors(graph, cond)
    return [info.name for info in graph.inputs
            if info.name in computed_from and _is_scalar_integer(info.type)]


def _host_reason(graph: Graph, cond: str) -> str:
    """HOST_REASON, naming the selector inputs the cond is computed from: `simulate` knows
    their values and fixes them (systolic.simulation.selector_inputs)."""
    selectors = selector_inputs_of(graph, cond)
    if not selectors:
        return HOST_REASON
    names = ", ".join(repr(name) for name in selectors)
    return (f"{HOST_REASON}; it depends on the value of input {names}: `systolic simulate "
            "--input` fixes that value and maps the chosen branch")


def _ancestors(graph: Graph, name: str) -> set[str]:
    producer = {out: node for node in graph.nodes for out in node.outputs if out}
    seen: set[str] = set()
    pending = [name]
    while pending:
        value = pending.pop()
        if value and value not in seen:
            seen.add(value)
            if (node := producer.get(value)) is not None:
                pending += node.inputs
    return seen


def _is_scalar_integer(tensor_type: TensorType) -> bool:
    dtype = tensor_type.dtype
    return (dtype.has_numpy and dtype.numpy.kind in ("i", "u", "b") and tensor_type.is_static
            and math.prod(d for d in tensor_type.shape or () if isinstance(d, int)) <= 1)


def _is_if(node: Node) -> bool:
    return node.op_type == "If" and node.domain == "" and bool(node.inputs) and bool(
        node.inputs[0])


def _inline(node: Node, branch: Graph, namer: Namer) -> tuple[list[Node], list[Tensor]]:
    """Return the branch's nodes and constants renamed into the main graph, then one Identity
    per If output from the branch output it takes."""
    first_capture = len(node.inputs) - len(node.captures)
    rename = dict(zip(node.captures, node.inputs[first_capture:], strict=True))
    prefix = node.label
    for tensor in branch.initializers:
        rename[tensor.name] = namer(f"{prefix}/{tensor.name}")
    for inner in branch.nodes:
        for name in inner.outputs:
            if name:
                rename[name] = namer(f"{prefix}/{name}")
    nodes = [
        dataclasses.replace(
            inner,
            name=namer(f"{prefix}/{inner.name or inner.op_type}"),
            inputs=tuple(rename.get(n, n) if n else "" for n in inner.inputs),
            outputs=tuple(rename[n] if n else "" for n in inner.outputs),
            attrs=Attrs(dict(inner.attrs)),
        )
        for inner in branch.nodes
    ]
    tensors = [dataclasses.replace(t, name=rename[t.name]) for t in branch.initializers]
    for index, (source, target) in enumerate(zip(branch.outputs, node.outputs, strict=True)):
        if target:
            nodes.append(make_node("Identity", [rename.get(source.name, source.name)],
                                   [target], name=namer(f"{prefix}/output{index}")))
    return nodes, tensors
