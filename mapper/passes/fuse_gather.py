"""DequantizeLinear -> Gather of constant indices -> QuantizeLinear with the same parameters
becomes the Gather of the integers: an unrolled recurrent layer's time steps (Gather of one
step of the input projection computed for every step at once) then select 8-bit elements
instead of dequantizing, selecting and quantizing again.

Exact: Q(DQ(v)) = v for every v of the type when both have the same per-tensor scale, zero
point and type, and Gather only selects elements. The Gather of the integers is a layout
operator of the lowering (an alias, or LOAD + COPY of a strided view; `layout.py`); the
DequantizeLinear left unread goes with eliminate_dead.
"""

import dataclasses

from systolic.ir import Model, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import make_node
from systolic.mapper.passes.quant_params import NotFusable, QuantParams, per_tensor_params
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["fuse_gather"]

def fuse_gather(model: Model, report: PassReport) -> Model:
    """Return `model` with every DQ -> Gather(constant indices) -> Q of equal parameters
    replaced by a Gather of the quantized input."""
    ctx = FusionContext(model.graph)
    changed = False
    for node in model.graph.nodes:
        if node.domain != "" or node.op_type != "Gather" or len(node.inputs) != 2:
            continue
        try:
            quantize = _matching_quantize(ctx, node)
        except NotFusable:
            continue
        dequantize = ctx.producers[node.inputs[0]]
        gather = make_node("Gather", (dequantize.inputs[0], node.inputs[1]),
                           quantize.outputs[:1], name=node.name, attrs=node.attrs)
        ctx.replace((node, quantize), gather, at=node)
        report.record(quantize.label, FUSED, into=node.name)
        report.note(node.label, "selects elements of the 8-bit tensor (constant indices)")
        changed = True
    return dataclasses.replace(model, graph=ctx.result()) if changed else model


def _matching_quantize(ctx: FusionContext, gather: Node) -> Node:
    """Return the QuantizeLinear that alone reads `gather`, when the Gather's indices are
    constant and it reads a DequantizeLinear of the same parameters; else NotFusable."""
    data, indices = gather.inputs
    if indices not in ctx.constants:
        raise NotFusable("the indices are computed")
    dequantize = ctx.producer(data, "DequantizeLinear")
    quantize = ctx.sole_reader(gather.outputs[0])
    if dequantize is None or quantize.op_type != "QuantizeLinear" or quantize.domain != "":
        raise NotFusable("not DQ -> Gather -> Q")
    if _params(ctx, dequantize) != _params(ctx, quantize):
        raise NotFusable("the QuantizeLinear has other parameters than the DequantizeLinear")
    return quantize


def _params(ctx: FusionContext, node: Node) -> QuantParams:
    """The per-tensor parameters of a QuantizeLinear/DequantizeLinear; else NotFusable."""
    if len(node.inputs) < 2:
        raise NotFusable(f"the {node.op_type} has no scale")
    zero_point = node.inputs[2] if len(node.inputs) > 2 else None
    return per_tensor_params(ctx.constants, node.inputs[1], zero_point or None, node.op_type)
