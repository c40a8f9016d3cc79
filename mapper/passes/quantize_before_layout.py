"""Move a QuantizeLinear in front of the float layout ops that feed it, so they move integers.

QuantizeLinear is element-wise and layout ops (Reshape, Flatten, Squeeze, Unsqueeze,
Transpose, Concat, Slice) only move elements, so for per-tensor parameters p

    Q_p(layout(a, b, ...)) = layout(Q_p(a), Q_p(b), ...)

exactly. A float layout chain ending in a Q (the zero insertion `conv_transpose` writes in a
float model: Concat of a float fill constant, then `quantize_float` quantizes only the
Conv's input; YOLOv5/YOLOX's Focus: Concat of four strided Slices of the float input image)
becomes the same chain on the integers, which the lowering runs as layout (aliases and COPYs)
instead of float ops on the host. Each leaf of the chain becomes:
- a value read through a DequantizeLinear of the same per-tensor parameters: its integers
  (Q_p(DQ_p(u)) = u);
- a float constant: the constant quantized now (QuantizeLinear's rounding: half to even,
  saturated to the type);
- any other value: a new QuantizeLinear of p (on the host, before the layout ops).

Preconditions: the Q is ai.onnx with constant per-tensor scale and zero point; every node
of the chain is a default-domain layout op whose (float) output has no reader outside the
chain and is not a graph output. Otherwise nothing changes.
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    replace_graph,
    splice,
    tensor,
    with_graph,
)
from systolic.mapper.passes.quant_params import NotFusable, QuantParams, per_tensor_params
from systolic.mapper.passes.report import REMOVED, PassReport
from systolic.reference.kernels import quant

__all__ = ["quantize_before_layout"]

LAYOUT = frozenset({"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat",
                    "Slice"})


def quantize_before_layout(model: Model, report: PassReport) -> Model:
    """Return `model` with each QuantizeLinear after a float layout chain moved in front
    of it (see the module docstring)."""
    graph = model.graph
    constants, producers, namer = constants_of(graph), graph.producers(), Namer(graph)
    readers = graph.consumers()
    replaced: dict[int, list[Node]] = {}  # id(Q) -> the integer chain ending in Q's output
    removed: set[int] = set()
    added: list[Tensor] = []
    for q in graph.nodes:
        if q.op_type != "QuantizeLinear" or q.domain != "" or id(q) in removed:
            continue
        chain = _chain(graph, q, producers, readers)
        if not chain:
            continue
        try:
            params = per_tensor_params(constants, q.inputs[1], _zero_name(q), "output")
        except NotFusable:
            continue
        nodes, tensors = _integer_chain(chain, q, params, (constants, producers), namer)
        replaced[id(q)] = nodes
        removed.update(id(n) for n in chain)
        added += tensors
        report.record(q.label, REMOVED, reason="its quantization moved in front of the "
                      "layout ops before it")
    if not replaced:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, replaced, removed), added))


def _chain(graph: Graph, q: Node, producers: dict[str, Node],
           consumers: dict[str, list[Node]]) -> list[Node]:  # fmt: skip
    """Return the layout nodes feeding `q` (graph order), or [] when the chain does not
    qualify."""
    outputs = {info.name for info in graph.outputs}
    found: dict[int, Node] = {}
    last = producers.get(q.inputs[0])
    pending = [last] if last is not None else []
    readers_ok: dict[str, set[int]] = {}
    while pending:
        node = pending.pop()
        if node.op_type not in LAYOUT or node.domain != "" or len(node.outputs) != 1:
            return []
        found_type = graph.type_of(node.outputs[0])
        if found_type is None or found_type.dtype.numpy.kind != "f":
            return []
        if node.outputs[0] in outputs:
            return []
        found[id(node)] = node
        readers_ok[node.outputs[0]] = {id(r) for r in consumers.get(node.outputs[0], [])}
        for name in _data_inputs(node):
            producer = producers.get(name) if name else None
            if producer is not None and producer.op_type in LAYOUT and producer.domain == "":
                pending.append(producer)
    allowed = set(found) | {id(q)}
    if any(not readers <= allowed for readers in readers_ok.values()):
        return []
    return [n for n in graph.nodes if id(n) in found]


def _integer_chain(chain: list[Node], q: Node, params: QuantParams,
                   known: tuple[dict[str, np.ndarray], dict[str, Node]],
                   namer: Namer) -> tuple[list[Node], list[Tensor]]:  # fmt: skip
    """Return the chain's nodes on integers (the last one writing Q's output), the new
    QuantizeLinear nodes of its other leaves first, and the constants they need."""
    constants, producers = known
    inner = {n.outputs[0] for n in chain}
    renamed = {n.outputs[0]: namer(f"{n.outputs[0]}_quantized") for n in chain}
    renamed[chain[-1].outputs[0]] = q.outputs[0]
    leaves: dict[str, str] = {}
    nodes: list[Node] = []
    tensors: list[Tensor] = []
    for node in chain:
        for name in _data_inputs(node):
            if name in inner or name in leaves:
                continue
            dq = producers.get(name)
            if name in constants:
                leaves[name] = namer(f"{name}_quantized")
                tensors.append(tensor(leaves[name], _quantize(constants[name], params)))
            elif dq is not None and _same_dq(dq, params, constants):
                leaves[name] = dq.inputs[0]
            else:
                leaves[name] = namer(f"{name}_quantized")
                nodes.append(make_node("QuantizeLinear", [name, *q.inputs[1:]],
                                       [leaves[name]], name=namer(f"{q.label}_{name}"),
                                       version=q.version))  # the moved Q's own version
    for node in chain:
        data = set(_data_inputs(node))
        inputs = tuple(renamed.get(n, leaves.get(n, n)) if n in data else n
                       for n in node.inputs)
        nodes.append(dataclasses.replace(node, inputs=inputs,
                                         outputs=(renamed[node.outputs[0]],)))
    return nodes, tensors


def _data_inputs(node: Node) -> tuple[str, ...]:
    return node.inputs if node.op_type == "Concat" else node.inputs[:1]


def _zero_name(node: Node) -> str | None:
    return node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None


def _same_dq(dq: Node, params: QuantParams, constants: dict[str, np.ndarray]) -> bool:
    if dq.op_type != "DequantizeLinear" or dq.domain != "":
        return False
    try:
        theirs = per_tensor_params(constants, dq.inputs[1], _zero_name(dq), "input")
    except NotFusable:
        return False
    return theirs.same_as(params)


def _quantize(value: np.ndarray, params: QuantParams) -> np.ndarray:
    """Return QuantizeLinear(value) for per-tensor `params`, as the reference computes it."""
    return quant.quantize(value.astype(np.float32), np.array(params.scale, np.float32),
                          np.array(params.zero_point), axis=None, dtype=params.dtype.numpy)
