"""Dynamic quantization on the array: a MatMulInteger with a constant B that no requantization
pattern took (one of two computed tensors: `computed_integer_product`) (onnxruntime's quantize_dynamic: DynamicQuantizeLinear -> MatMulInteger(A_u8,
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

ConvInteger likewise becomes systolic.QConvInt (colsum: the weights' sum per output channel,
the host's correction shaped [1, M, 1, ...]); with a constant zero point the padding holds it
(`x_zero_point`, the halo the compiler fills); with a computed one the padding holds the
implied z0 and the host adds (z0 - a_zp) * S, S the weights' sum over each output's taps
inside the image (a constant [1, M, *out]: the convolution of ones).
"""

import dataclasses
from collections.abc import Callable

import numpy as np

from systolic.ir import DataType, Model, Node
from systolic.mapper.passes.computed_integer_product import fuse_computed_product
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_int, attr_ints, attr_str, make_node
from systolic.mapper.passes.quant_params import EIGHT_BIT, NotFusable, effective_weights
from systolic.mapper.passes.report import DYNAMIC_SCALING, PassReport
from systolic.reference.kernels.conv import conv_nd, resolve_auto_pad

__all__ = ["fuse_integer_matmul"]

_Fuser = Callable[[FusionContext, Node, PassReport], None]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_CORRECTION_WHY = (
    f"{DYNAMIC_SCALING}: corrects the int32 product for the run-time zero point of "
    "DynamicQuantizeLinear (a_zp times the weights' sums): runs on the host")
_IMPLIED_ZERO_POINT = {DataType.UINT8: 128, DataType.INT8: 0}
"""The zero point QMatMulInt implies for A: the int8 domain's 0."""


def fuse_integer_matmul(model: Model, report: PassReport) -> Model:
    """Return `model` with every MatMulInteger of a constant 2-D B replaced by QMatMulInt
    (and the host nodes of a computed zero point's correction)."""
    ctx = FusionContext(model.graph)
    for node in model.graph.nodes:
        if node.domain != "" or node.op_type not in _FUSERS or ctx.is_scheduled(node):
            continue
        try:
            if node.op_type == "MatMulInteger" and node.inputs[1] not in ctx.constants:
                fuse_computed_product(ctx, node, report, model.opset("") or 13)
            else:
                _FUSERS[node.op_type](ctx, node, report)
        except NotFusable as reason:
            report.note(node.label, str(reason))
    return dataclasses.replace(model, graph=ctx.result())


def _input(node: Node, index: int) -> str:
    return node.inputs[index] if len(node.inputs) > index else ""


def _int32(values: np.ndarray, what: str) -> np.ndarray:
    if values.size and (values.min() < _INT32_MIN or values.max() > _INT32_MAX):
        raise NotFusable(f"the {what} does not fit int32")
    return values.astype(np.int32)


def _effective(ctx: FusionContext, node: Node, axis: int) -> tuple[np.ndarray, DataType]:
    """Return (the constant weights minus their zero point, int8; A's type); raise NotFusable
    unless the weights are constant (rank 2 for a matrix product) and A is computed 8-bit."""
    a, b = node.inputs[0], node.inputs[1]
    weights = ctx.constants.get(b)
    if weights is None or (axis == 1 and weights.ndim != 2):
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
    if b_zp is not None and b_zp.size not in (1, weights.shape[axis]):
        raise NotFusable("the weight zero point is neither per tensor nor per output channel")
    return effective_weights(weights, b_zp, axis), a_type


def _matmul(ctx: FusionContext, node: Node, report: PassReport) -> None:
    b_eff, a_type = _effective(ctx, node, 1)
    _fuse(ctx, node, report, "QMatMulInt", b_eff, b_eff.astype(np.int64).sum(axis=0), {},
          a_type)


def _conv(ctx: FusionContext, node: Node, report: PassReport) -> None:
    w_eff, a_type = _effective(ctx, node, 0)
    shape = ctx.shape_of(node.inputs[0])
    if shape is None or len(shape) not in (3, 4) or w_eff.ndim != len(shape):
        raise NotFusable("only 1-D and 2-D convolutions of static shape run on the array")
    rank = len(shape) - 2
    strides = attr_ints(node, "strides") or (1,) * rank
    dilations = attr_ints(node, "dilations") or (1,) * rank
    pads = resolve_auto_pad(attr_str(node, "auto_pad", "NOTSET"), shape[2:], w_eff.shape[2:],
                            strides, dilations, attr_ints(node, "pads"))
    attrs: dict[str, object] = {"strides": tuple(strides), "pads": tuple(pads),
                                "dilations": tuple(dilations), "group": attr_int(node, "group", 1)}
    sums = w_eff.astype(np.int64).reshape(w_eff.shape[0], -1).sum(axis=1)
    _fuse(ctx, node, report, "QConvInt", w_eff, sums, attrs, a_type)


def _fuse(ctx: FusionContext, node: Node, report: PassReport, op_type: str, w_eff: np.ndarray,
          sums: np.ndarray, attrs: dict[str, object], a_type: DataType) -> None:  # fmt: skip
    """Replace integer product `node` by `op_type` of `w_eff` (`sums`: its sum per output
    channel), the activation zero point folded or corrected on the host (module docstring)."""
    a = node.inputs[0]
    implied = _IMPLIED_ZERO_POINT[a_type]
    conv = op_type == "QConvInt"
    a_zp_name = _input(node, 2)
    name = node.name or node.label
    w_name = ctx.constant(f"{name}_weight_i8", w_eff)
    out = node.outputs[0]
    channel_shape = (1, -1) + (1,) * (w_eff.ndim - 2) if conv else (-1,)
    if not a_zp_name or a_zp_name in ctx.constants:
        a_zp = ctx.constants[a_zp_name] if a_zp_name else np.zeros((), np.int64)
        if a_zp.size != 1:
            raise NotFusable("the input zero point is per row (only per tensor is fused)")
        zero = int(a_zp.reshape(()))
        bias = _int32((implied - zero) * sums, "folded zero point")
        extra = {"x_zero_point": zero} if conv else {}  # the padding holds the zero point
        new = ctx.systolic_node(op_type, [a, w_name, ctx.constant(f"{name}_bias", bias)],
                                out, name, {**attrs, **extra})
        ctx.replace([node], new, at=node)
        report.fused([node.label], f"systolic.{op_type} {new.name!r}")
        return
    zp_shape = ctx.shape_of(a_zp_name)
    if zp_shape is None or int(np.prod(zp_shape)) != 1 or ctx.dtype_of(a_zp_name) != a_type:
        raise NotFusable("the computed input zero point is not one value of A's type")
    if conv and any(attrs["pads"]):  # type: ignore[arg-type]
        _padded_conv(ctx, node, report, w_name, attrs, implied, a_zp_name)
        return
    bias = _int32(implied * sums, "zero point's bias")
    raw = ctx.namer(f"{out}_raw")
    extra = {"x_zero_point": implied} if conv else {}
    new = ctx.systolic_node(op_type, [a, w_name, ctx.constant(f"{name}_bias", bias)],
                            raw, name, {**attrs, **extra})
    zp32, part = ctx.namer(f"{name}_zero_point_i32"), ctx.namer(f"{name}_zero_point_part")
    negated = ctx.constant(f"{name}_minus_sums",
                           _int32(-sums, "weight sum").reshape(channel_shape))
    host = [
        make_node("Cast", [a_zp_name], [zp32], name=ctx.namer(f"{name}_zp_cast"),
                  attrs={"to": int(DataType.INT32)}),
        make_node("Mul", [zp32, negated], [part], name=ctx.namer(f"{name}_zp_mul")),
        make_node("Add", [raw, part], [out], name=ctx.namer(f"{name}_zp_add")),
    ]
    ctx.replace([node], new, at=node)
    for step in host:
        ctx.replace([], step, at=node)
        report.created(step.name, _CORRECTION_WHY)
    report.fused([node.label], f"systolic.{op_type} {new.name!r}")


def _padded_conv(ctx: FusionContext, node: Node, report: PassReport, w_name: str,
                 attrs: dict[str, object], implied: int, a_zp_name: str) -> None:  # fmt: skip
    """A padded ConvInteger with a computed zero point: QConvInt's padding holds the implied
    z0 (contributing 0), so the correction (z0 - a_zp) * S, S[m, p] the weights' sum over the
    taps of output p inside the image (a constant, the convolution of ones), runs on the host:
    Cast, Sub, Mul, Add."""
    shape = ctx.shape_of(node.inputs[0])
    assert shape is not None
    weights = ctx.constants[w_name].astype(np.int64)
    ones = np.ones((1, *shape[1:]), np.int64)
    taps = conv_nd(ones, weights, strides=attrs["strides"], pads=attrs["pads"],  # type: ignore[arg-type]
                   dilations=attrs["dilations"], group=attrs["group"],  # type: ignore[arg-type]
                   acc_dtype=np.int64)
    name = node.name or node.label
    out = node.outputs[0]
    raw = ctx.namer(f"{out}_raw")
    new = ctx.systolic_node("QConvInt", [node.inputs[0], w_name], raw, name,
                            {**attrs, "x_zero_point": implied})
    zp32, gap = ctx.namer(f"{name}_zero_point_i32"), ctx.namer(f"{name}_zero_point_gap")
    part = ctx.namer(f"{name}_zero_point_part")
    z0 = ctx.constant(f"{name}_implied_zero_point", np.array(implied, np.int32))
    sums = ctx.constant(f"{name}_tap_sums", _int32(taps, "weight sum"))
    host = [
        make_node("Cast", [a_zp_name], [zp32], name=ctx.namer(f"{name}_zp_cast"),
                  attrs={"to": int(DataType.INT32)}),
        make_node("Sub", [z0, zp32], [gap], name=ctx.namer(f"{name}_zp_sub")),
        make_node("Mul", [gap, sums], [part], name=ctx.namer(f"{name}_zp_mul")),
        make_node("Add", [raw, part], [out], name=ctx.namer(f"{name}_zp_add")),
    ]
    ctx.replace([node], new, at=node)
    for step in host:
        ctx.replace([], step, at=node)
        report.created(step.name, _CORRECTION_WHY)
    report.fused([node.label], f"systolic.QConvInt {new.name!r}")


_FUSERS: dict[str, _Fuser] = {"MatMulInteger": _matmul, "ConvInteger": _conv}
