"""Fuse a Relu or Clip that follows a systolic op in the quantized domain into the op's
output bounds.

Pattern: S -> DequantizeLinear -> Relu|Clip -> QuantizeLinear with the same scale and zero
point as the DequantizeLinear, S one of QConv, QMatMul, QAdd, QMul, QMaxPool, QAveragePool writing
only to that DequantizeLinear. Since QuantizeLinear(DequantizeLinear(q)) = q for the same
parameters and QuantizeLinear is monotonic, the chain equals clamping S's integers: a Relu
raises y_lo to the zero point, Clip's bounds are quantized with QuantizeLinear semantics
(`quant_params.activation_bounds`). S then writes the QuantizeLinear's output directly.
Relu/Clip met inside the QDQ patterns are fused by `fuse_qdq` with the same helper.
"""

import dataclasses

from systolic.ir import SYSTOLIC_DOMAIN, Attrs, Model, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_int
from systolic.mapper.passes.quant_params import (
    NotFusable,
    activation_bounds,
    is_activation,
    per_tensor_params,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["fuse_activations"]

BOUNDED_OPS = frozenset({"QConv", "QMatMul", "QAdd", "QMul", "QMaxPool", "QAveragePool"})


def fuse_activations(model: Model, report: PassReport) -> Model:
    """Return `model` with quantized-domain Relu/Clip merged into the systolic ops."""
    ctx = FusionContext(model.graph)
    for node in model.graph.nodes:
        if node.domain != SYSTOLIC_DOMAIN or node.op_type not in BOUNDED_OPS:
            continue
        try:
            _fuse(ctx, node, report)
        except NotFusable:
            continue  # nothing to fuse: the op keeps its bounds
    return dataclasses.replace(model, graph=ctx.result())


def _fuse(ctx: FusionContext, node: Node, report: PassReport) -> None:
    dq = ctx.sole_reader(node.outputs[0])
    if dq.op_type != "DequantizeLinear" or dq.domain != "":
        raise NotFusable("not dequantized")
    act = ctx.sole_reader(dq.outputs[0])
    if not is_activation(act, ctx.constants) or act.inputs[0] != dq.outputs[0]:
        raise NotFusable("no activation")
    q = ctx.sole_reader(act.outputs[0])
    if q.op_type != "QuantizeLinear" or q.domain != "":
        raise NotFusable("not requantized")
    before = per_tensor_params(ctx.constants, dq.inputs[1], _at(dq, 2) or None, "input")
    after = per_tensor_params(ctx.constants, q.inputs[1], _at(q, 2) or None, "output")
    if not before.same_as(after):
        raise NotFusable("the activation is requantized with other parameters")
    if node.op_type != "QMaxPool" and attr_int(node, "y_zero_point", 0) != before.zero_point:
        raise NotFusable("the dequantization does not match the op's zero point")
    lo, hi = activation_bounds(act, ctx.constants, before)
    old_lo = attr_int(node, "y_lo", before.range[0])
    old_hi = attr_int(node, "y_hi", before.range[1])
    new_lo, new_hi = max(lo, old_lo), min(hi, old_hi)
    if new_lo > new_hi:
        raise NotFusable("empty range")
    attrs = Attrs({**dict(node.attrs), "y_lo": new_lo, "y_hi": new_hi})
    new = dataclasses.replace(node, outputs=(q.outputs[0],), attrs=attrs)
    ctx.replace([node, dq, act, q], new, at=q)
    report.fused([dq.label, act.label, q.label], f"systolic.{node.op_type} {node.name!r}")


def _at(node: Node, index: int) -> str:
    return node.inputs[index] if len(node.inputs) > index else ""
