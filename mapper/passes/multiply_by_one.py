"""Products by one: Mul(x, 1), Mul(1, x) and Div(x, 1) of a constant of ones that does not
change x's shape are x (BLOOM's attention adds its ALiBi bias as baddbmm(alibi, q, k,
beta=1.0), exported as Mul(alibi, 1.0) in every layer: a float Mul of a value the host made,
on the host).

x * 1 and x / 1 are x exactly in IEEE arithmetic (signed zeros, infinities and NaN too), so
readers of the product read x; a product that is a graph output stays.
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.ir import Graph, Model, Node
from systolic.mapper.passes.graph_tools import constants_of, rename_inputs
from systolic.mapper.passes.report import REMOVED, PassReport

__all__ = ["drop_products_by_one"]


def drop_products_by_one(model: Model, report: PassReport) -> Model:
    """Return `model` without its products by one (module docstring); `model` itself when
    there is none."""
    graph = model.graph
    constants = constants_of(graph)
    outputs = {info.name for info in graph.outputs}
    alias: dict[str, str] = {}
    kept: list[Node] = []
    for node in graph.nodes:
        node = rename_inputs(node, alias)
        kept_input = _factor_of_one(graph, node, constants)
        if kept_input is None or node.outputs[0] in outputs:
            kept.append(node)
            continue
        alias[node.outputs[0]] = kept_input
        report.record(node.label, REMOVED, reason=f"a {node.op_type} by one is its other input")
    if not alias:
        return model
    return dataclasses.replace(model, graph=dataclasses.replace(graph, nodes=tuple(kept)))


def _factor_of_one(graph: Graph, node: Node, constants: Mapping[str, np.ndarray]) -> str | None:
    """The input that `node` (ai.onnx Mul or Div of two inputs) returns unchanged: the other
    one when one is a constant of ones (the divisor, for a Div) of the same element type whose
    broadcast keeps that input's static shape; else None."""
    if node.domain != "" or node.op_type not in ("Mul", "Div") or len(node.inputs) != 2:
        return None
    positions = (1,) if node.op_type == "Div" else (1, 0)
    for one in positions:
        value, other = constants.get(node.inputs[one]), node.inputs[1 - one]
        if value is None or other in constants or not _keeps_shape(graph, other, value):
            continue
        if value.size and bool(np.all(value == 1)):
            return other
    return None


def _keeps_shape(graph: Graph, name: str, value: np.ndarray) -> bool:
    """True when value `name` has a static shape and element type equal to `value`'s dtype,
    and `value` broadcast against it leaves that shape."""
    found = graph.type_of(name)
    if found is None or found.shape is None or not found.is_static or not found.dtype.has_numpy:
        return False
    if found.dtype.numpy != value.dtype:
        return False
    shape = tuple(int(d) for d in found.shape)  # type: ignore[arg-type]
    try:
        return tuple(np.broadcast_shapes(shape, value.shape)) == shape
    except ValueError:
        return False
