"""Copies of a Loop's or Scan's body in the main graph, and the stacking of per-iteration
values into a scan output: what unroll_loop and unroll_scan share."""

import dataclasses

import numpy as np

from systolic.ir import Attrs, Graph, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, make_node, tensor

__all__ = ["copy_body", "stack_values"]


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
