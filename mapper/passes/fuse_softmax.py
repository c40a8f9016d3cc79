"""Softmax on the accelerator: DequantizeLinear -> Softmax -> QuantizeLinear and
com.microsoft QLinearSoftmax become one systolic.QSoftmax (the SOFTMAX instruction).

Algebra (docs/numeric-contract.md "Softmax"). softmax(s_x (q - z_x)) depends only on the
distances d = max - q (0 .. 255) of a row: the exp table E[d] = rhe(2^15 exp(-s_x d)) (uint16,
E[0] = 2^15) holds them, one reciprocal of the row sum per row scales them to p / 2^15 ~
softmax, and the output stage's (multiplier, shift) of 1 / (2^15 s_y) with y_zero_point and
the output type's bounds quantizes p like the QuantizeLinear. The result is within one step of
QuantizeLinear(Softmax(DequantizeLinear(x))) (not bit-exact: the exp table and the reciprocal
round; tests/systolic/reference/ops/test_op_systolic_qsoftmax.py measures it).

Rows: QSoftmax normalises X flattened from its `axis` on. Softmax before opset 13 (and
QLinearSoftmax with `opset` < 13) is that 2-D coercion already; from opset 13 the single axis
must be the last one with a size above 1 (the axes after it all of size 1), else the node
stays on the host with that reason.

QLinearSoftmax becomes the same QSoftmax: it is then not bit-exact with onnxruntime's own
kernel (a float32 table with its own offset, a float32 sum and floor(1 / y_scale)), only
within one step of it.

The DequantizeLinear is left to dead-code elimination (it may have other readers).
"""

import dataclasses

import numpy as np

from systolic.ir import Model, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_int
from systolic.mapper.passes.quant_params import (
    EIGHT_BIT,
    NotFusable,
    QuantParams,
    output_multipliers,
    per_tensor_params,
)
from systolic.mapper.passes.report import PassReport
from systolic.reference.ops.op_systolic_qsoftmax import EXP_ONE, EXP_TABLE_SIZE

__all__ = ["exp_table", "fuse_softmax"]


def exp_table(x_scale: float) -> np.ndarray:
    """Return the uint16 exp table E[k] = rhe(2^15 exp(-x_scale k)), k = 0 .. 255 (float64)."""
    steps = np.arange(EXP_TABLE_SIZE, dtype=np.float64)
    table: np.ndarray = np.rint(EXP_ONE * np.exp(-float(x_scale) * steps)).astype(np.uint16)
    return table


def fuse_softmax(model: Model, report: PassReport) -> Model:
    """Return `model` with DQ -> Softmax -> Q and QLinearSoftmax replaced by QSoftmax."""
    ctx = FusionContext(model.graph)
    for node in model.graph.nodes:
        if ctx.is_scheduled(node):
            continue
        try:
            if node.domain == "" and node.op_type == "Softmax":
                _qdq_softmax(ctx, node, report)
            elif node.domain == "com.microsoft" and node.op_type == "QLinearSoftmax":
                _qlinear_softmax(ctx, node, report)
        except NotFusable as reason:
            report.note(node.label, str(reason))
    return dataclasses.replace(model, graph=ctx.result())


def _input(node: Node, index: int) -> str:
    return node.inputs[index] if len(node.inputs) > index else ""


def _row_axis(ctx: FusionContext, x: str, axis: int, coerced: bool) -> int:
    """Return QSoftmax's axis (non-negative) for a softmax over `axis` of `x`: itself for the
    2-D coercion (`coerced`), else the single axis, which must be the last of size above 1."""
    shape = ctx.shape_of(x)
    if shape is None or not shape:
        raise NotFusable("the softmax input has no static shape of rank >= 1")
    rank = len(shape)
    if not -rank <= axis < rank:
        raise NotFusable(f"softmax axis {axis} is out of range for rank {rank}")
    axis %= rank
    if not coerced and any(d != 1 for d in shape[axis + 1:]):
        raise NotFusable(f"softmax over axis {axis} of {list(shape)} is not over the last axis "
                         "(SOFTMAX normalises contiguous rows): it runs on the host")
    return axis


def _attrs(xp: QuantParams, yp: QuantParams, axis: int) -> dict[str, object]:
    (mult,), (shift,) = output_multipliers([1.0 / (EXP_ONE * float(np.float32(yp.scale)))])
    low, high = yp.range
    return {"axis": axis, "multiplier": mult, "shift": shift, "y_zero_point": yp.zero_point,
            "y_type": int(yp.dtype), "y_lo": low, "y_hi": high}


def _replace(ctx: FusionContext, report: PassReport, x: str, xp: QuantParams, yp: QuantParams,
             axis: int, chain: list[Node]) -> None:
    if ctx.dtype_of(x) not in EIGHT_BIT or ctx.dtype_of(x) != xp.dtype:
        raise NotFusable("the softmax input is not an 8-bit tensor")
    anchor, last = chain[0], chain[-1]
    if ctx.dtype_of(last.outputs[0]) != yp.dtype:
        raise NotFusable("the softmax output's type is not its zero point's")
    name = anchor.name or anchor.label
    table = ctx.constant(f"{name}_exp_table", exp_table(float(np.float32(xp.scale))))
    new = ctx.systolic_node("QSoftmax", [x, table], last.outputs[0], name, _attrs(xp, yp, axis))
    ctx.replace(chain, new, at=last)
    report.fused([n.label for n in chain], f"systolic.QSoftmax {new.name!r}")


def _qdq_softmax(ctx: FusionContext, node: Node, report: PassReport) -> None:
    dq = ctx.producer(node.inputs[0], "DequantizeLinear")
    if dq is None:
        raise NotFusable("the softmax input is not dequantized from an 8-bit tensor: it runs "
                         "in float on the host")
    if dq.inputs[0] in ctx.constants:
        raise NotFusable("the softmax input is a constant")
    xp = per_tensor_params(ctx.constants, dq.inputs[1], _input(dq, 2) or None, "softmax input")
    try:
        q = ctx.sole_reader(node.outputs[0])
    except NotFusable as why:
        raise NotFusable(f"the softmax result is not quantized by one QuantizeLinear ({why}): "
                         "it runs in float on the host") from None
    if q.op_type != "QuantizeLinear" or q.domain != "":
        raise NotFusable(f"the softmax result is read by {q.op_type}, not quantized by a "
                         "QuantizeLinear: it runs in float on the host")
    yp = per_tensor_params(ctx.constants, q.inputs[1], _input(q, 2) or None, "softmax output")
    version = node.version or 13
    coerced = version < 13
    axis = _row_axis(ctx, dq.inputs[0], attr_int(node, "axis", 1 if coerced else -1), coerced)
    _replace(ctx, report, dq.inputs[0], xp, yp, axis, [node, q])


def _qlinear_softmax(ctx: FusionContext, node: Node, report: PassReport) -> None:
    xp = per_tensor_params(ctx.constants, _input(node, 1), _input(node, 2) or None, "input")
    yp = per_tensor_params(ctx.constants, _input(node, 3), _input(node, 4) or None, "output")
    x_type = ctx.dtype_of(node.inputs[0])
    if x_type in EIGHT_BIT:  # X's zero point (which does not matter) may be omitted
        xp = dataclasses.replace(xp, dtype=x_type)
    coerced = attr_int(node, "opset", 13) < 13
    axis = _row_axis(ctx, node.inputs[0], attr_int(node, "axis", -1), coerced)
    _replace(ctx, report, node.inputs[0], xp, yp, axis, [node])
