"""Merge the dynamic products that read one DynamicQuantizeLinear's result (a transformer's
Q, K and V projections) into one product of all their columns, so the dynamic machinery on
the host (the scales' product, the zero point's correction, the scaling Mul) runs once for
them instead of once each.

onnxruntime's `quantize_dynamic` writes each product k as

    s_k = a_scale * w_scale_k;  y_k = Cast(MatMulInteger(A, B_k, a_zp, b_zp_k)) * s_k
    [+ bias_k]  (a float vector along the last axis)

A group of such products of the same A and a_zp (constant 2-D B_k, constant per-tensor or
per-column w_scale_k and b_zp_k of one type, every one with a bias or none) becomes

    S = a_scale * concat(w_scale_k per column);  Y = Cast(MatMulInteger(A, concat(B_k),
    a_zp, concat(b_zp_k per column))) * S [+ concat(bias_k)];  y_k = Gather(Y, k's columns)

Exact: every element is the same int32 sum, the same float32 product a_scale * w_scale of
the same two numbers, the same float32 Cast, Mul and Add. The Gathers of constant indices
along the last axis become layout ops on the integers once `dynamic_island` quantizes Y (one
set of parameters for the group's results, calibrated on their joint range).

The merged nodes keep the names of the group's first product's nodes (the report follows
them: its scaling nodes' host reasons, its MatMulInteger's fusion); the other products'
nodes are recorded as fused into them.
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.ir import Model, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, constants_of, make_node, tensor
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["merge_dynamic_products"]


@dataclasses.dataclass(frozen=True)
class _Product:
    """One dynamic product and its epilogue: the nodes, B, w_scale and b_zp per column, the
    bias (or None) and the value its readers read (the bias Add's result or the Mul's)."""

    nodes: tuple[Node, ...]
    weights: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray
    bias: np.ndarray | None
    result: str


def merge_dynamic_products(model: Model, report: PassReport) -> Model:
    """Return `model` with each group of two or more dynamic products of one
    DynamicQuantizeLinear's result merged (module docstring), or `model` itself."""
    graph = model.graph
    known = (constants_of(graph), graph.consumers(), graph.producers())
    groups: dict[tuple[str, str, str], list[_Product]] = {}
    for node in graph.nodes:
        found = _product(node, *known)
        if found is not None:
            scale = next(n for n in found.nodes[0].inputs if n not in known[0])
            groups.setdefault((node.inputs[0], node.inputs[2], scale), []).append(found)
    merged = [group for group in groups.values() if len(group) > 1 and _compatible(group)]
    if not merged:
        return model
    namer = Namer(graph)
    replaced: dict[int, list[Node]] = {}  # id of a group's first node -> the new nodes
    dropped: set[int] = set()
    tensors: list[Tensor] = []
    for (a, a_zp, a_scale), group in ((key, g) for key, g in groups.items() if g in merged):
        nodes, new = _merged(group, a, a_zp, a_scale, namer)
        replaced[id(group[0].nodes[0])] = nodes
        tensors += new
        dropped.update(id(n) for product in group for n in product.nodes)
        for product in group[1:]:
            for node, into in zip(product.nodes, group[0].nodes, strict=True):
                report.record(node.label, FUSED, into=f"{into.op_type} {into.name!r}, merged "
                              "with the products of the same DynamicQuantizeLinear result")
    out: list[Node] = []
    for node in graph.nodes:
        out += replaced.get(id(node), [])
        if id(node) not in dropped:
            out.append(node)
    return dataclasses.replace(model, graph=dataclasses.replace(
        graph, nodes=tuple(_ordered(out)), initializers=graph.initializers + tuple(tensors)))


def _product(node: Node, constants: Mapping[str, np.ndarray],
             consumers: Mapping[str, list[Node]],
             producers: Mapping[str, Node]) -> _Product | None:
    """The dynamic product rooted at MatMulInteger `node` (module docstring), or None."""
    if node.domain != "" or node.op_type != "MatMulInteger" or len(node.inputs) < 3:
        return None
    weights = constants.get(node.inputs[1])
    b_zp = constants.get(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] else None
    if weights is None or weights.ndim != 2 or node.inputs[2] in constants or b_zp is None:
        return None
    cast = _only_reader(consumers, node.outputs[0], "Cast")
    mul = _only_reader(consumers, cast.outputs[0], "Mul") if cast is not None else None
    if cast is None or mul is None:
        return None
    scale_mul = producers.get(next((n for n in mul.inputs if n != cast.outputs[0]), ""))
    if scale_mul is None or scale_mul.op_type != "Mul" or len(consumers[scale_mul.outputs[0]]) != 1:
        return None
    w_scale = [constants[n] for n in scale_mul.inputs if n in constants]
    if len(w_scale) != 1:
        return None
    columns = weights.shape[1]
    nodes = [scale_mul, node, cast, mul]
    result, bias = mul.outputs[0], None
    add = _only_reader(consumers, result, "Add")
    if add is not None:
        other = next((n for n in add.inputs if n != result), "")
        value = constants.get(other)
        if value is not None and value.dtype == np.float32 and value.shape == (columns,):
            nodes.append(add)
            result, bias = add.outputs[0], value
    if w_scale[0].size not in (1, columns) or b_zp.size not in (1, columns):
        return None
    return _Product(tuple(nodes), weights,
                    np.broadcast_to(w_scale[0].reshape(-1), (columns,)).astype(np.float32),
                    np.broadcast_to(b_zp.reshape(-1), (columns,)).astype(b_zp.dtype), bias,
                    result)


def _only_reader(consumers: Mapping[str, list[Node]], value: str, op_type: str) -> Node | None:
    readers = consumers.get(value, [])
    if len(readers) != 1 or readers[0].domain != "" or readers[0].op_type != op_type:
        return None
    return readers[0]


def _compatible(group: list[_Product]) -> bool:
    """One weight type, one zero point type, the same row count, every one biased or none."""
    first = group[0]
    return all(p.weights.dtype == first.weights.dtype
               and p.zero_points.dtype == first.zero_points.dtype
               and p.weights.shape[0] == first.weights.shape[0]
               and (p.bias is None) == (first.bias is None) for p in group)


def _merged(group: list[_Product], a: str, a_zp: str, a_scale: str,
            namer: Namer) -> tuple[list[Node], list[Tensor]]:  # fmt: skip
    """The nodes of the merged product and the Gathers giving each product's result."""
    base = group[0].nodes[1].name
    names = {part: namer(f"{base}_merged_{part}") for part in (
        "weights", "zero_point", "w_scale", "bias", "scales", "product", "float", "scaled",
        "biased")}
    first = [node.name for node in group[0].nodes]  # scales Mul, product, Cast, Mul, [Add]
    tensors = [tensor(names["weights"], np.concatenate([p.weights for p in group], axis=1)),
               tensor(names["zero_point"], np.concatenate([p.zero_points for p in group])),
               tensor(names["w_scale"], np.concatenate([p.scales for p in group]))]
    nodes = [
        make_node("Mul", (a_scale, names["w_scale"]), (names["scales"],), name=first[0]),
        make_node("MatMulInteger", (a, names["weights"], a_zp, names["zero_point"]),
                  (names["product"],), name=first[1]),
        make_node("Cast", (names["product"],), (names["float"],), name=first[2],
                  attrs={"to": 1}),
        make_node("Mul", (names["float"], names["scales"]), (names["scaled"],), name=first[3]),
    ]
    full = names["scaled"]
    if group[0].bias is not None:
        bias = np.concatenate([p.bias for p in group if p.bias is not None])
        tensors.append(tensor(names["bias"], bias))
        nodes.append(make_node("Add", (full, names["bias"]), (names["biased"],), name=first[4]))
        full = names["biased"]
    start = 0
    for product in group:
        columns = product.weights.shape[1]
        indices = namer(f"{product.result}_columns")
        tensors.append(tensor(indices, np.arange(start, start + columns, dtype=np.int64)))
        nodes.append(make_node("Gather", (full, indices), (product.result,),
                               name=namer(f"{product.result}_Gather"), attrs={"axis": -1}))
        start += columns
    return nodes, tensors


def _ordered(nodes: list[Node]) -> list[Node]:
    """`nodes` in an order where every node follows the producers of its inputs (the merged
    product sits where its group's first node was; a later product's A or scale may be made
    after that point only if the group were not one DynamicQuantizeLinear's, which grouping
    rules out, so this keeps the given order unless it must move a node later)."""
    produced = {out for node in nodes for out in node.outputs}
    done: set[str] = set()
    ordered: list[Node] = []
    waiting = list(nodes)
    while waiting:
        progress = []
        for node in waiting:
            needs = [n for n in node.inputs if n and n in produced and n not in done]
            if needs:
                progress.append(node)
                continue
            ordered.append(node)
            done.update(node.outputs)
        if len(progress) == len(waiting):
            raise AssertionError("merge_dynamic_products made a cycle")
        waiting = progress
    return ordered
