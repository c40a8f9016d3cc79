"""The float remnants of a statically quantized model that no fusion can take, quantized after
training.

onnxruntime's QOperator export leaves some operators float between DequantizeLinear and
QuantizeLinear, and when a float result is read twice the fusions cannot make one
accelerator op of it: a MobileNetV3 block's HardSwish whose result a QuantizeLinear and a
float GlobalAveragePool both read (tests/models/realistic/mbv3_block_qop). Such a component
is quantized like the float islands of quantized models (`quantize_float(region=...)`): its
values that a QuantizeLinear of the model reads take that node's parameters, the others are
calibrated, so the HardSwish becomes a table and the pool a QAveragePool reading the
quantized HardSwish instead of the float one.

The model's result then differs from the model as written by that quantization (the pool
reads 8-bit values where the model reads float ones): such a model is *partly float*
(`quantizes_float_remnants`), compared with the model as written, like a float model.

onnxruntime's static quantizer also leaves a decoder's RMS norm float between the DQ of x and
the Q of 1 / sqrt(mean(x^2) + eps): Pow, ReduceMean (a MatMul by 1/H since `rms_mean`), Add,
Sqrt, Div. No fusion takes a chain with a product in it, so a component holding a MatMul is
quantized too: the squares and 1 / sqrt(. + eps) become tables, the mean a QMatMul.

A component: default-domain nodes of element-wise operators (`fuse_tables.ELEMENTWISE`),
pools (AveragePool, GlobalAveragePool, MaxPool) or MatMuls of a computed A and a float32
constant B, with float results, every computed input the result of a DequantizeLinear or of
another member, every reader of a result a QuantizeLinear or another member (no graph
output); only components with a result read more than once or a MatMul are taken (the
fusions take the others as they are). Dynamically quantized models are `dynamic_island`'s.
"""

import numpy as np

from systolic.ir import DataType, Graph, Model, Node
from systolic.mapper.passes.fuse_tables import ELEMENTWISE
from systolic.mapper.passes.graph_tools import constants_of

__all__ = ["float_remnants", "quantizes_float_remnants"]

_POOLS = frozenset({"AveragePool", "GlobalAveragePool", "MaxPool"})


def float_remnants(graph: Graph) -> frozenset[str]:
    """Return the node names of the components the module docstring describes."""
    if any(n.op_type == "DynamicQuantizeLinear" and n.domain == "" for n in graph.nodes):
        return frozenset()
    members = _candidates(graph)
    consumers = graph.consumers()
    return frozenset(name for part in _components(graph, members)
                     if any(len(consumers.get(node.outputs[0], [])) > 1
                            or node.op_type == "MatMul" for node in part)
                     for name in (node.name for node in part))


def quantizes_float_remnants(model: Model) -> bool:
    """True when the passes quantize such a component of `model` after training."""
    return any(node.op_type == "QuantizeLinear" for node in model.graph.nodes) and bool(
        float_remnants(model.graph))


def _candidates(graph: Graph) -> dict[str, Node]:
    """The nodes that qualify, by the fixed point of the module docstring's conditions."""
    constants = constants_of(graph)
    producers, consumers = graph.producers(), graph.consumers()
    outputs = {info.name for info in graph.outputs}
    members = {node.outputs[0]: node for node in graph.nodes if _kind_fits(graph, node)}
    changed = True
    while changed:
        changed = False
        for value, node in list(members.items()):
            inputs_ok = all(
                name in constants or name in members
                or getattr(producers.get(name), "op_type", "") == "DequantizeLinear"
                for name in node.inputs if name)
            readers = consumers.get(value, [])
            readers_ok = value not in outputs and readers and all(
                reader.op_type == "QuantizeLinear" or reader.outputs[0] in members
                for reader in readers)
            if not (inputs_ok and readers_ok):
                del members[value]
                changed = True
    return {node.name: node for node in members.values()}


def _kind_fits(graph: Graph, node: Node) -> bool:
    if node.domain != "" or len([o for o in node.outputs if o]) != 1 or not node.inputs:
        return False
    if node.op_type == "MatMul":
        constants = constants_of(graph)
        weights = constants.get(node.inputs[1])
        if weights is None or weights.dtype != np.float32 or node.inputs[0] in constants:
            return False
    elif node.op_type not in ELEMENTWISE and node.op_type not in _POOLS:
        return False
    found = graph.type_of(node.outputs[0])
    return found is not None and found.dtype == DataType.FLOAT


def _components(graph: Graph, members: dict[str, Node]) -> list[list[Node]]:
    """The connected parts of `members` (edges: a member reading another's result)."""
    by_output = {node.outputs[0]: node for node in members.values()}
    parent = {name: name for name in members}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for node in members.values():
        for value in node.inputs:
            source = by_output.get(value)
            if source is not None:
                parent[root(source.name)] = root(node.name)
    parts: dict[str, list[Node]] = {}
    for node in graph.nodes:
        if node.name in members:
            parts.setdefault(root(node.name), []).append(node)
    return list(parts.values())
