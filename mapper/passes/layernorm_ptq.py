"""What post-training quantization quantizes around a float layer normalization, so that the
fusions make it systolic.QLayerNorm, then QMul (gamma) and QAdd (beta).

For each chain `layernorm_match.match_layernorm` finds in the float graph (the decomposed
ReduceMean ... Div form, or the LayerNormalization(x, 1) `fuse_layernorm.split_layernorm`
leaves), the plan quantizes its input x and its normalized result n (calibrated like any
activation: n's range is that of the float normalized values over the calibration set);
when n's only reader is a Mul by a float constant along the last axis (gamma, more than one
value), its result is quantized and gamma is read through a DequantizeLinear of its per-tensor
int8 quantization (`quantize_vector`), flattened to [H] (the product's shape is n's: the
constant has no more axes than n; [1, H] of a batch of 1 would otherwise have n's own shape,
which the element-wise fusions take for a full tensor, not a vector); likewise an Add of such
a constant (beta) after that (or after n). The chain's own nodes are left out of every other rule (its Mul(d, d), say, is
no product of two computed tensors to quantize). A chain that cannot be taken (not over the
last axis, ...) is left to the other rules; `fuse_layernorm` notes why.
"""

import dataclasses
import math

import numpy as np

from systolic.ir import DataType, Graph, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.layernorm_match import (
    LayerNormChain,
    match_layernorm,
    may_hold_layernorm,
)
from systolic.mapper.passes.quant_params import NotFusable
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast

__all__ = ["LayerNormPlan", "layernorm_island", "layernorm_plans", "quantize_vector"]

VECTOR_MAX = 127


@dataclasses.dataclass(frozen=True)
class LayerNormPlan:
    """The values to quantize for one layer normalization (input, normalized result, gamma's
    and beta's results), the nodes it takes from the other rules, and the constant operands
    to read through a DequantizeLinear: {node name: input index}."""

    chain: LayerNormChain
    values: tuple[str, ...]
    nodes: tuple[Node, ...]
    vectors: dict[str, int]


def layernorm_plans(graph: Graph, taken: set[int]) -> dict[int, LayerNormPlan]:
    """Return the plan of every float layer normalization none of whose nodes is in `taken`
    (ids), by id of the chain's last node."""
    if not may_hold_layernorm(graph):
        return {}
    ctx = FusionContext(graph)
    plans: dict[int, LayerNormPlan] = {}
    for node in graph.nodes:
        if node.op_type not in ("Div", "Mul", "LayerNormalization") or id(node) in taken:
            continue
        try:
            chain = match_layernorm(ctx, node)
        except NotFusable:
            continue
        if chain is None or not _float(graph, chain.x) or any(id(n) in taken
                                                              for n in chain.nodes):
            continue
        plans[id(node)] = _affine(ctx, chain, taken)
    return plans


def _float(graph: Graph, name: str) -> bool:
    found = graph.type_of(name)
    return found is not None and found.dtype == DataType.FLOAT


def _affine(ctx: FusionContext, chain: LayerNormChain, taken: set[int]) -> LayerNormPlan:
    """Return the plan of `chain` with the gamma Mul and beta Add after it, when there. A
    value a QuantizeLinear alone reads (a quantized model's own) is not planned again."""
    values, nodes, vectors = [chain.x, chain.normalized], list(chain.nodes), {}
    last = chain.normalized
    for op_type in ("Mul", "Add"):
        found = _vector_op(ctx, last, op_type, taken)
        if found is None:
            continue
        node, index = found
        vectors[node.name] = index
        nodes.append(node)
        last = node.outputs[0]
        values.append(last)
    values = [v for v in values if not _quantized_by_model(ctx, v)]
    return LayerNormPlan(chain, tuple(values), tuple(nodes), vectors)


def _quantized_by_model(ctx: FusionContext, value: str) -> bool:
    readers = ctx.consumers.get(value, [])
    return (len(readers) == 1 and readers[0].op_type == "QuantizeLinear"
            and value not in ctx.outputs)


def layernorm_island(graph: Graph) -> frozenset[str]:
    """Return the node names of the float layer normalizations of a quantized model that
    read a DequantizeLinear's result and whose normalized value the model does not quantize
    (a QDQ LayerNormalization `split_layernorm` split): `quantize_float`'s `region` for
    them, so their normalized value (and gamma's result) is calibrated and quantized."""
    producers = graph.producers()
    names: set[str] = set()
    for plan in layernorm_plans(graph, set()).values():
        source = producers.get(plan.chain.x)
        if source is None or source.op_type != "DequantizeLinear":
            continue
        if plan.chain.normalized in plan.values:
            names.update(n.name for n in plan.nodes)
    return frozenset(names)


def _vector_op(ctx: FusionContext, value: str, op_type: str,
               taken: set[int]) -> tuple[Node, int] | None:  # fmt: skip
    """Return (the node, the constant's input index) when `value`'s only reader is an
    `op_type` of it and a float constant along its last axis of more than one value."""
    readers = ctx.consumers.get(value, [])
    if len(readers) != 1 or value in ctx.outputs:
        return None
    node = readers[0]
    if (node.op_type != op_type or node.domain != "" or len(node.inputs) != 2
            or id(node) in taken or not _float(ctx.graph, node.outputs[0])):
        return None
    index = 1 if node.inputs[0] == value else 0
    constant = ctx.constants.get(node.inputs[index])
    shape = ctx.shape_of(value)
    if (node.inputs[1 - index] != value or constant is None or constant.dtype != np.float32
            or shape is None or math.prod(constant.shape) <= 1 or constant.ndim > len(shape)
            or not last_axis_broadcast(shape, tuple(constant.shape))
            or not np.all(np.isfinite(constant))):
        return None
    return node, index


def quantize_vector(values: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """Return (int8 values, float32 scale) of a constant vector, symmetric per tensor: scale
    max|v| / 127 (1 when all are 0), values rhe(v / scale) clamped to [-127, 127]."""
    peak = float(np.abs(values).max()) if values.size else 0.0
    scale = np.float32(peak / VECTOR_MAX) if peak > 0 else np.float32(1.0)
    q = np.clip(np.rint(values.astype(np.float64) / np.float64(scale)), -VECTOR_MAX, VECTOR_MAX)
    return q.astype(np.int8), scale
