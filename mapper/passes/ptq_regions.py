"""What post-training quantization quantizes around element-wise float computations, so that
they become integer ops after the fusions: activation regions (-> systolic.QTable through
`fuse_tables`) and products of two computed tensors (-> systolic.QMul through `fuse_qdq`).

- An activation region starts at a float value `source` that is quantized already (a
  Conv/Gemm/MatMul/Add result, a region's result ...): it is the maximal set of element-wise
  nodes (`fuse_tables.ELEMENTWISE`, one output each) after it whose non-constant inputs are
  `source` or the region's own values, every constant holding one value. When exactly one of
  its values is read outside it (or is a graph output), that value is quantized too: the
  graph becomes DQ(source) -> region -> Q, one table. SiLU (x * Sigmoid(x)), GELU (Gelu or
  its erf/tanh chains), Mish, HardSwish, Sigmoid, Tanh, LeakyRelu, Elu, Softplus ... all take
  this form. A region with several results read outside stays float, with that reason.
- A Mul of two computed float tensors (squeeze-excitation scaling: x * gate, the gate
  [N|1, C, 1, 1]) of the same static shape or one per channel of the other: both inputs and
  the result (through a Relu/Clip that is its only reader) are quantized.
"""

import dataclasses
import heapq
from collections.abc import Mapping, Sequence

import numpy as np

from systolic.ir import DataType, Graph, Node
from systolic.mapper.passes.fuse_tables import ELEMENTWISE
from systolic.reference.ops.op_systolic_qmul import per_channel_broadcast

__all__ = ["Region", "elementwise_region", "is_product_of_computed"]


@dataclasses.dataclass(frozen=True)
class Region:
    nodes: tuple[Node, ...]  # graph order
    exits: tuple[str, ...]  # its values read outside it (or graph outputs)


def _float(graph: Graph, name: str) -> bool:
    found = graph.type_of(name)
    return found is not None and found.dtype == DataType.FLOAT


def _joins(node: Node, values: set[str], constants: Mapping[str, np.ndarray]) -> bool:
    """True when `node` is element-wise and reads only `values` and one-value constants,
    at least one of `values`."""
    if node.domain != "" or node.op_type not in ELEMENTWISE:
        return False
    if len([o for o in node.outputs if o]) != 1:
        return False
    reads_region = False
    for name in node.inputs:
        if not name:
            continue
        if name in constants:
            if constants[name].size != 1:
                return False
        elif name in values:
            reads_region = True
        else:
            return False
    return reads_region


def elementwise_region(
    graph: Graph,
    source: str,
    constants: Mapping[str, np.ndarray],
    consumers: Mapping[str, list[Node]],
    order: Mapping[int, int],
    taken: set[int],
) -> Region:
    """Return the maximal element-wise region fed by `source` (skipping nodes in `taken`, by
    id), and its exits (`consumers`: the graph's readers of each value). Candidates are the
    readers of the region's values, visited in graph order (a node's inputs are decided
    before it), so the work is proportional to the region and its readers."""
    values = {source}
    nodes: list[Node] = []
    pending: list[tuple[int, Node]] = []
    seen: set[int] = set()

    def push_readers(name: str) -> None:
        for reader in consumers.get(name, []):
            if id(reader) not in seen and id(reader) not in taken:
                seen.add(id(reader))
                heapq.heappush(pending, (order[id(reader)], reader))

    push_readers(source)
    while pending:
        _, node = heapq.heappop(pending)
        if not _joins(node, values, constants):
            continue
        if not all(_float(graph, o) for o in node.outputs if o):
            continue
        nodes.append(node)
        for out in node.outputs:
            if out:
                values.add(out)
                push_readers(out)
    inside = {id(node) for node in nodes}
    outputs = {info.name for info in graph.outputs}
    exits = []
    for node in nodes:
        out = node.outputs[0]
        if out in outputs or any(id(r) not in inside for r in consumers.get(out, [])):
            exits.append(out)
    return Region(tuple(nodes), tuple(exits))


def is_product_of_computed(node: Node, graph: Graph,
                           constants: Mapping[str, np.ndarray]) -> bool:
    """True for a Mul of two computed float tensors of static shapes, equal or one per
    channel [N|1, C, 1, ...] of the other."""
    if node.domain != "" or node.op_type != "Mul" or len(node.inputs) != 2:
        return False
    a, b = node.inputs
    if a in constants or b in constants or not (_float(graph, a) and _float(graph, b)):
        return False
    shape_a, shape_b = _static_shape(graph, a), _static_shape(graph, b)
    if shape_a is None or shape_b is None:
        return False
    return (shape_a == shape_b or per_channel_broadcast(shape_a, shape_b)
            or per_channel_broadcast(shape_b, shape_a))


def _static_shape(graph: Graph, name: str) -> Sequence[int] | None:
    found = graph.type_of(name)
    if found is None or found.shape is None or not found.is_static:
        return None
    return tuple(int(d) for d in found.shape if isinstance(d, int))
