"""Dynamic quantization on the array: a MatMulInteger with a constant B that no requantization
pattern took (onnxruntime's quantize_dynamic: DynamicQuantizeLinear -> MatMulInteger(A_u8,
B_i8, a_zp, b_zp) -> Cast -> Mul(scale product)) becomes systolic.QMatMulInt, whose int32
result the array writes unrequantized (STORE.raw); the float Cast and Mul after it stay on
the host, and so does DynamicQuantizeLinear (it computes the activation's scale and zero
point from the tensor's range at run time).

Algebra. MatMulInteger gives Y = sum_k (A - a_zp)(B - b_zp), wrapped to int32. QMatMulInt
computes wrap32(sum_k (A - z0) B_eff + Bias) with z0 = 128 for uint8 A (0 for int8: the
LOAD's flip_sign) and B_eff = B - b_zp (constant, it must fit int8). Since
sum_k (A - a_zp) B_eff = sum_k (A - z0) B_eff + (z0 - a_zp) colsum(B_eff):
- a constant a_zp (or none: 0) folds into Bias = (z0 - a_zp) colsum;
- a computed a_zp (a scalar: DynamicQuantizeLinear's) gives Bias = z0 colsum and ordinary
  host nodes add a_zp * (-colsum), a per-column vector times a scalar, in int32:
  Cast(a_zp -> int32) -> Mul(-colsum) -> Add(QMatMulInt's result).
Every step wraps modulo 2^32 like MatMulInteger's own int32 result: bit-exact.
"""

import dataclasses

import numpy as np

from systolic.ir import DataType, Model, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import make_node
from systolic.mapper.passes.quant_params import EIGHT_BIT, NotFusable, effective_weights
from systolic.mapper.passes.report import PassReport

__all__ = ["fuse_integer_matmul"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_IMPLIED_ZERO_POINT = {DataType.UINT8: 128, DataType.INT8: 0}
"""The zero point QMatMulInt implies for A: the int8 domain's 0."""


def fuse_integer_matmul(model: Model, report: PassReport) -> Model:
    """Return `model` with every MatMulInteger of a constant 2-D B replaced by QMatMulInt
    (and the host nodes of a computed zero point's correction)."""
    ctx = FusionContext(model.graph)
    for node in model.graph.nodes:
        if node.domain != "" or node.op_type != "MatMulInteger" or ctx.is_scheduled(node):
            continue
        try:
            _fuse(ctx, node, report)
        except NotFusable as reason:
            report.note(node.label, str(reason))
    return dataclasses.replace(model, graph=ctx.result())


def _input(node: Node, index: int) -> str:
    return node.inputs[index] if len(node.inputs) > index else ""


def _int32(values: np.ndarray, what: str) -> np.ndarray:
    if values.size and (values.min() < _INT32_MIN or values.max() > _INT32_MAX):
        raise NotFusable(f"the {what} does not fit int32")
    return values.astype(np.int32)


def _fuse(ctx: FusionContext, node: Node, report: PassReport) -> None:
    a, b = node.inputs[0], node.inputs[1]
    weights = ctx.constants.get(b)
    if weights is None or weights.ndim != 2:
        raise NotFusable("B is not a constant matrix: the product of two computed tensors "
                         "runs on the array only with a requantization after it")
    a_type = ctx.dtype_of(a)
    if a_type not in EIGHT_BIT or a in ctx.constants:
        raise NotFusable("A is not a computed 8-bit tensor")
    assert a_type is not None
    b_zp_name = _input(node, 3)
    b_zp = ctx.constants.get(b_zp_name) if b_zp_name else None
    if b_zp_name and b_zp is None:
        raise NotFusable("the weight zero point is not a constant")
    if b_zp is not None and b_zp.size not in (1, weights.shape[1]):
        raise NotFusable("the weight zero point is neither per tensor nor per column")
    b_eff = effective_weights(weights, b_zp, 1)
    colsum = b_eff.astype(np.int64).sum(axis=0)
    implied = _IMPLIED_ZERO_POINT[a_type]
    a_zp_name = _input(node, 2)
    name = node.name or node.label
    w_name = ctx.constant(f"{name}_weight_i8", b_eff)
    out = node.outputs[0]
    if not a_zp_name or a_zp_name in ctx.constants:
        a_zp = ctx.constants[a_zp_name] if a_zp_name else np.zeros((), np.int64)
        if a_zp.size != 1:
            raise NotFusable("the input zero point is per row (only per tensor is fused)")
        bias = _int32((implied - int(a_zp.reshape(()))) * colsum, "folded zero point")
        new = ctx.systolic_node("QMatMulInt", [a, w_name, ctx.constant(f"{name}_bias", bias)],
                                out, name, {})
        ctx.replace([node], new, at=node)
        report.fused([node.label], f"systolic.QMatMulInt {new.name!r}")
        return
    zp_shape = ctx.shape_of(a_zp_name)
    if zp_shape is None or int(np.prod(zp_shape)) != 1 or ctx.dtype_of(a_zp_name) != a_type:
        raise NotFusable("the computed input zero point is not one value of A's type")
    bias = _int32(implied * colsum, "zero point's bias")
    raw = ctx.namer(f"{out}_raw")
    new = ctx.systolic_node("QMatMulInt", [a, w_name, ctx.constant(f"{name}_bias", bias)],
                            raw, name, {})
    zp32, part = ctx.namer(f"{name}_zero_point_i32"), ctx.namer(f"{name}_zero_point_part")
    negated = ctx.constant(f"{name}_minus_colsum", _int32(-colsum, "column sum"))
    host = [
        make_node("Cast", [a_zp_name], [zp32], name=ctx.namer(f"{name}_zp_cast"),
                  attrs={"to": int(DataType.INT32)}),
        make_node("Mul", [zp32, negated], [part], name=ctx.namer(f"{name}_zp_mul")),
        make_node("Add", [raw, part], [out], name=ctx.namer(f"{name}_zp_add")),
    ]
    ctx.replace([node], new, at=node)
    for extra in host:
        ctx.replace([], extra, at=node)
    report.fused([node.label], f"systolic.QMatMulInt {new.name!r}")
