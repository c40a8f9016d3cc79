"""A model's summary as plain data (JSON-ready): metadata, signature, one row per node with
its bound operator, output shapes, MACs (with "macs_note" for If, Loop and Scan: how their
subgraphs were counted) and the unit that will run it (array, vector, host,
or none for nodes the mapper removes: `systolic.mapper.lowering.coverage.node_units`) and why, and totals.

`systolic inspect` prints it as text or writes it as JSON.
"""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from systolic.ir import Graph, Model, Node, Tensor, TensorType, ValueInfo
from systolic.mapper.macs import node_macs_noted

__all__ = ["model_report"]

HOST_REASON = "not mapped yet (the mapper will choose array, vector or host)"


def model_report(model: Model, units: Sequence[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Return the summary of `model` as a dict of str, int, list and dict values only.

    `units`: (unit, reason) per node in graph order (`node_units`); without it every node
    says "host" with the reason that it is not mapped yet."""
    graph = model.graph
    types: dict[str, TensorType] = {t.name: t.type for t in graph.initializers}
    types.update(
        (info.name, info.type) for info in (*graph.inputs, *graph.value_info, *graph.outputs)
    )
    constants = {t.name: t for t in graph.initializers}
    constants.update((node.outputs[0], value) for node in graph.nodes
                     if node.op_type == "Constant" and not node.domain and node.outputs
                     and isinstance(value := node.attrs.get("value"), Tensor))
    nodes = [_node_row(node, types, constants) for node in graph.nodes]
    for row, (unit, reason) in zip(nodes, units or (), strict=False):
        row["unit"], row["reason"] = unit, reason
    for row in nodes:
        if row.get("macs_note"):
            row["reason"] = f"{row['reason']}; {row['macs_note']}"
    return {
        "ir_version": model.ir_version,
        "opsets": [{"domain": d or "ai.onnx", "version": v} for d, v in model.opsets],
        "producer": {"name": model.producer_name, "version": model.producer_version},
        "domain": model.domain,
        "model_version": {"value": model.model_version, "text": model.model_version_text},
        "doc": model.doc,
        "metadata": dict(model.metadata),
        "graph": graph.name,
        "inputs": [_value(info) for info in graph.inputs if graph.initializer(info.name) is None],
        "outputs": [_value(info) for info in graph.outputs],
        "nodes": nodes,
        "totals": {
            "nodes": len(nodes),
            "macs": sum(row["macs"] for row in nodes),
            "parameters": _parameters(graph),
        },
    }


def _parameters(graph: Graph) -> int:
    """Return the values `graph` stores: initializers and Constant nodes, those of its
    subgraphs (If's branches, Loop's and Scan's bodies) included."""
    return (sum(t.size for t in graph.initializers)
            + sum(_constant_size(node) for node in graph.nodes)
            + sum(_parameters(sub) for node in graph.nodes for _, sub in node.subgraphs))


def _constant_size(node: Node) -> int:
    """Return how many values a Constant node holds (exporters store weights in them too)."""
    if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
        return 0
    for value in node.attrs.values():
        if isinstance(value, Tensor):
            return int(value.data.size)
        if isinstance(value, tuple):
            return len(value)
        return 1
    return 0


def _value(info: ValueInfo) -> dict[str, Any]:
    return {"name": info.name, **_type(info.type)}


def _type(tensor_type: TensorType | None) -> dict[str, Any]:
    if tensor_type is None:
        return {"type": "?", "dtype": None, "shape": None}
    shape = None if tensor_type.shape is None else list(tensor_type.shape)
    return {"type": tensor_type.text(), "dtype": tensor_type.dtype.name.lower(), "shape": shape}


def _node_row(node: Node, types: dict[str, TensorType],
              constants: dict[str, Tensor]) -> dict[str, Any]:
    """One node's row; a subgraph node's row carries "macs_note" (how its MACs were counted)."""
    value_of: Callable[[str], np.ndarray | None] = (
        lambda name: np.asarray(constants[name].data) if name in constants else None)
    macs, note = node_macs_noted(node, types.get, value_of)
    row = {
        "name": node.label,
        "op": node.op_id,
        "domain": node.domain or "ai.onnx",
        "op_type": node.op_type,
        "version": node.version,
        "inputs": list(node.inputs),
        "outputs": [{"name": name, **_type(types.get(name))} for name in node.outputs if name],
        "macs": macs,
        "unit": "host",
        "reason": HOST_REASON,
    }
    if note:
        row["macs_note"] = note
    return row
