"""QOperator normalisation: onnxruntime's QOperator-format nodes become the systolic ops.

- QLinearConv -> QConv; QLinearMatMul, com.microsoft QGemm (quantized output) -> QMatMul
  (QLinearMatMul and MatMulInteger also with a computed B, attention style, with any
  constant per-tensor zero points);
- MatMulInteger / ConvInteger followed by Cast(float) -> Mul(constant scale) -> [Add(constant
  bias)] -> [Relu|Clip] -> QuantizeLinear -> QMatMul / QConv (other forms stay on the host);
- com.microsoft QLinearAdd -> QAdd (same shapes, or one operand along the other's last axis
  [1, ..., H], a constant included: LayerNorm's beta, a MatMul's bias); QLinearGlobalAveragePool, QLinearAveragePool
  (channels_last = 0) -> QAveragePool; MaxPool on uint8/int8 -> QMaxPool;
- com.microsoft QLinearSigmoid, QLinearLeakyRelu -> QTable, the table computed by running the
  node itself with the reference on the 256 input values (bit-exact with the reference's
  QLinearSigmoid/QLinearLeakyRelu); QLinearMul -> QMul (same shapes, or one operand per
  channel [N|1, C, 1, ...] or along the last axis [1, ..., H] of the other: LayerNorm's gamma;
  a constant of lower rank taken with its leading 1s: a [C, 1, 1] layer scale); a QLinearAdd
  or QLinearMul with one constant one-value operand (x + c, x * c: GELU's + 1 and * 0.5) is a
  function of x alone and becomes a QTable like the lookups; QLinearConcat -> a requantizing QTable per input whose parameters
  differ from the output's and a Concat (`qlinear_concat`). (QLinearSoftmax is
  fuse_softmax's: QSoftmax; a MatMulInteger no pattern here takes is fuse_integer_matmul's:
  QMatMulInt.)

Requantization multipliers are computed in float32 in onnxruntime's order (so that the
fixed-point (M, s), exact for a float32 multiplier, rounds the same products onnxruntime
rounds, up to a float32 rounding of the product) and decomposed with the hardware's
`quantize_multiplier`. Weight zero points are subtracted (the result must fit 8 bits).
"""

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from systolic.ir import DataType, Model, Node
from systolic.mapper.passes.constant_layout import transposed_copy
from systolic.mapper.passes.expand_constant_operand import expanded_shape
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_float, attr_int, attr_ints, attr_str
from systolic.mapper.passes.pool_geometry import pool_geometry
from systolic.mapper.passes.qlinear_concat import qlinear_concat
from systolic.mapper.passes.quant_params import (
    EIGHT_BIT,
    NotFusable,
    QuantParams,
    activation_bounds,
    add_multipliers,
    bias_to_int32,
    effective_weights,
    is_activation,
    output_multipliers,
    per_tensor_params,
)
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.tables import table_of
from systolic.reference.kernels.conv import resolve_auto_pad
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast, per_channel_broadcast

__all__ = ["fuse_integer_requantization", "normalize_qoperator"]


def normalize_qoperator(model: Model, report: PassReport) -> Model:
    """Return `model` with QOperator nodes replaced by systolic ops where they fit."""
    return _normalize(model, report, _HANDLERS)


def fuse_integer_requantization(model: Model, report: PassReport) -> Model:
    """Return `model` with the MatMulInteger/ConvInteger requantization chains (Cast ->
    Mul(constant) -> [Add(constant)] -> [Relu|Clip] -> QuantizeLinear) fused as
    `normalize_qoperator` fuses them; `model` itself when it has none. The pipeline runs it
    before the per-channel and float-island passes, which would otherwise take the chain's
    float scale and bias as a batch norm of their own (one QAdd more than the product's
    own bias)."""
    if not any(node.op_type in ("MatMulInteger", "ConvInteger") and node.domain == ""
               for node in model.graph.nodes):
        return model
    fused = _normalize(model, report, _INTEGER_HANDLERS)
    same = len(fused.graph.nodes) == len(model.graph.nodes) and all(
        a is b for a, b in zip(fused.graph.nodes, model.graph.nodes, strict=True))
    return model if same else fused


def _normalize(model: Model, report: PassReport,
               handlers: Mapping[tuple[str, str], "Handler"]) -> Model:
    """Return `model` with each node that `handlers` (by domain and op type) fuses replaced;
    a node they refuse is noted in `report` with the reason."""
    ctx = FusionContext(model.graph)
    for node in model.graph.nodes:
        handler = handlers.get((node.domain, node.op_type))
        if handler is None or ctx.is_scheduled(node):
            continue
        try:
            handler(ctx, node, report)
        except NotFusable as reason:
            report.note(node.label, str(reason))
    return dataclasses.replace(model, graph=ctx.result())


def _input(node: Node, index: int) -> str:
    return node.inputs[index] if len(node.inputs) > index else ""


def _params(ctx: FusionContext, node: Node, scale: int, zp: int, what: str) -> QuantParams:
    return per_tensor_params(ctx.constants, _input(node, scale), _input(node, zp) or None, what)


def _weights(ctx: FusionContext, node: Node, index: int, scale_index: int, zp_index: int,
             channels_axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (int8 weights minus zero point, float32 scale per output channel)."""
    w = ctx.constants.get(_input(node, index))
    scale = ctx.constants.get(_input(node, scale_index))
    zp_name = _input(node, zp_index)
    zp = ctx.constants.get(zp_name) if zp_name else None
    if w is None or scale is None or (zp_name and zp is None):
        raise NotFusable("the weights, their scale or zero point are not constants")
    channels = w.shape[channels_axis]
    if scale.size not in (1, channels) or (zp is not None and zp.size not in (1, channels)):
        raise NotFusable("weight scale or zero point is neither per tensor nor per channel")
    full = np.broadcast_to(scale.astype(np.float32).reshape(-1), (channels,)).copy()
    return effective_weights(w, zp, channels_axis), full


def _finish(ctx: FusionContext, report: PassReport, op_type: str, inputs: list[str],
            chain: list[Node], attrs: dict[str, object]) -> None:
    anchor, last = chain[0], chain[-1]
    new = ctx.systolic_node(op_type, inputs, last.outputs[0], anchor.name or anchor.label,
                            attrs)
    ctx.replace(chain, new, at=last)
    report.fused([n.label for n in chain], f"systolic.{op_type} {new.name!r}")


def _stage(out: QuantParams, lo: int | None = None, hi: int | None = None) -> dict[str, object]:
    low, high = out.range
    return {"y_zero_point": out.zero_point, "y_type": int(out.dtype),
            "y_lo": low if lo is None else lo, "y_hi": high if hi is None else hi}


def _conv_attrs(ctx: FusionContext, node: Node, kernel: tuple[int, ...]) -> dict[str, object]:
    shape = ctx.shape_of(node.inputs[0])
    if shape is None or len(shape) not in (3, 4):
        raise NotFusable("only 1-D and 2-D convolutions of static shape are fused")
    rank = len(kernel)
    strides = (attr_ints(node, "strides") or (1,) * rank)
    dilations = (attr_ints(node, "dilations") or (1,) * rank)
    pads = resolve_auto_pad(attr_str(node, "auto_pad", "NOTSET"), shape[2:], kernel,
                            strides, dilations, attr_ints(node, "pads"))
    return {"strides": strides, "pads": tuple(pads), "dilations": dilations,
            "group": attr_int(node, "group", 1)}


def _int32_bias(ctx: FusionContext, name: str, channels: int) -> list[str]:
    if not name:
        return []
    bias = ctx.constants.get(name)
    if bias is None or bias.dtype != np.int32 or bias.size not in (1, channels):
        raise NotFusable("the bias is not a constant int32 per output channel")
    full = np.broadcast_to(bias.reshape(-1), (channels,)).astype(np.int32)
    return [ctx.constant(f"{name}_i32", full)]


def _qlinear_conv(ctx: FusionContext, node: Node, report: PassReport) -> None:
    xp = _params(ctx, node, 1, 2, "input")
    yp = _params(ctx, node, 6, 7, "output")
    weights, w_scale = _weights(ctx, node, 3, 4, 5, 0)
    real = (np.float32(xp.scale) * w_scale) / np.float32(yp.scale)
    mult, shift = output_multipliers([float(r) for r in real])
    attrs = {**_conv_attrs(ctx, node, tuple(weights.shape[2:])), "x_zero_point": xp.zero_point,
             "multiplier": mult, "shift": shift, **_stage(yp)}
    inputs = [node.inputs[0], ctx.constant(f"{node.label}_weight_i8", weights),
              *_int32_bias(ctx, _input(node, 8), weights.shape[0])]
    _finish(ctx, report, "QConv", inputs, [node], attrs)


def _qlinear_matmul(ctx: FusionContext, node: Node, report: PassReport) -> None:
    ap = _params(ctx, node, 1, 2, "input")
    yp = _params(ctx, node, 6, 7, "output")
    b = ctx.constants.get(node.inputs[3])
    if b is None:
        bp = _params(ctx, node, 4, 5, "second input")
        b_shape = ctx.shape_of(node.inputs[3])
        if b_shape is None or len(b_shape) < 2:
            raise NotFusable("B is computed but not of static rank >= 2")
        product = (np.float32(ap.scale) * np.float32(bp.scale)) / np.float32(yp.scale)
        mult, shift = output_multipliers([float(product)])
        attrs = {"a_zero_point": ap.zero_point, "b_zero_point": bp.zero_point,
                 "multiplier": mult, "shift": shift, **_stage(yp)}
        _finish(ctx, report, "QMatMul", [node.inputs[0], node.inputs[3]], [node], attrs)
        return
    if b.ndim < 2:
        raise NotFusable("B is not a constant matrix")
    weights, b_scale = _weights(ctx, node, 3, 4, 5, b.ndim - 1)
    real = (np.float32(ap.scale) * b_scale) / np.float32(yp.scale)
    mult, shift = output_multipliers([float(r) for r in real])
    attrs = {"a_zero_point": ap.zero_point, "multiplier": mult, "shift": shift, **_stage(yp)}
    inputs = [node.inputs[0], ctx.constant(f"{node.label}_weight_i8", weights)]
    _finish(ctx, report, "QMatMul", inputs, [node], attrs)


def _qgemm(ctx: FusionContext, node: Node, report: PassReport) -> None:
    if not _input(node, 7) or not _input(node, 8):
        raise NotFusable("QGemm with a float output runs on the host")
    if attr_int(node, "transA", 0):
        raise NotFusable("QGemm with transA is not fused")
    ap = _params(ctx, node, 1, 2, "input")
    yp = _params(ctx, node, 7, 8, "output")
    trans_b = bool(attr_int(node, "transB", 0))
    b = ctx.constants.get(node.inputs[3])
    if b is None or b.ndim != 2:
        raise NotFusable("B is not a constant matrix")
    weights, b_scale = _weights(ctx, node, 3, 4, 5, 0 if trans_b else 1)
    if trans_b:
        weights = transposed_copy(weights)
    alpha = np.float32(attr_float(node, "alpha", 1.0))
    if alpha <= 0:
        raise NotFusable("QGemm with alpha <= 0 is not fused")
    real = (alpha * np.float32(ap.scale) * b_scale) / np.float32(yp.scale)
    mult, shift = output_multipliers([float(r) for r in real])
    attrs = {"a_zero_point": ap.zero_point, "multiplier": mult, "shift": shift, **_stage(yp)}
    inputs = [node.inputs[0], ctx.constant(f"{node.label}_weight_i8", weights),
              *_int32_bias(ctx, _input(node, 6), weights.shape[1])]
    _finish(ctx, report, "QMatMul", inputs, [node], attrs)


def _integer_chain(ctx: FusionContext, node: Node) -> tuple[list[Node], np.ndarray,
                                                            np.ndarray | None, Node | None,
                                                            QuantParams]:
    """Match Cast(float) -> Mul(const) -> [Add(const)] -> [Relu|Clip] -> QuantizeLinear after
    an integer product; return (nodes, scale, float bias or None, activation, out params)."""
    cast = ctx.sole_reader(node.outputs[0])
    if cast.op_type != "Cast" or attr_int(cast, "to", 0) != DataType.FLOAT:
        raise NotFusable("the integer accumulator is not cast to float for requantization "
                         "(only Cast -> Mul -> [Add] -> QuantizeLinear is fused)")
    mul = ctx.sole_reader(cast.outputs[0])
    scale_name = next((n for n in mul.inputs if n != cast.outputs[0]), "")
    if mul.op_type != "Mul" or scale_name not in ctx.constants:
        raise NotFusable("the accumulator is not multiplied by a constant scale")
    chain = [node, cast, mul]
    bias = None
    reader = ctx.sole_reader(mul.outputs[0])
    if reader.op_type == "Add":
        other = next((n for n in reader.inputs if n != mul.outputs[0]), "")
        if other not in ctx.constants:
            raise NotFusable("the bias added after requantization is not a constant")
        bias = ctx.constants[other]
        chain.append(reader)
        reader = ctx.sole_reader(reader.outputs[0])
    act = None
    if is_activation(reader, ctx.constants):
        act = reader
        chain.append(reader)
        reader = ctx.sole_reader(reader.outputs[0])
    if reader.op_type != "QuantizeLinear":
        raise NotFusable("the requantized result is not quantized by a QuantizeLinear")
    chain.append(reader)
    zp = _input(reader, 2) or None
    out = per_tensor_params(ctx.constants, reader.inputs[1], zp, "output")
    return chain, ctx.constants[scale_name], bias, act, out


def _integer_product(ctx: FusionContext, node: Node, report: PassReport) -> None:
    conv = node.op_type == "ConvInteger"
    w = ctx.constants.get(node.inputs[1])
    if w is None and not conv:
        _dynamic_integer_product(ctx, node, report)
        return
    if w is None:
        raise NotFusable("the weights are not a constant")
    channels_axis = 0 if conv else 1
    channels = w.shape[channels_axis]
    a_zp_name = _input(node, 2)
    a_zp = ctx.constants.get(a_zp_name) if a_zp_name else np.zeros((), np.uint8)
    if a_zp is None or a_zp.size != 1:
        raise NotFusable("the input zero point is not a constant scalar")
    w_zp_name = _input(node, 3)
    w_zp = ctx.constants.get(w_zp_name) if w_zp_name else None
    if w_zp_name and w_zp is None:
        raise NotFusable("the weight zero point is not a constant")
    weights = effective_weights(w, w_zp, channels_axis)
    chain, scale, bias, act, out = _integer_chain(ctx, node)
    if scale.size not in (1, channels):
        raise NotFusable("the requantization scale is neither per tensor nor per channel")
    acc_scale = np.broadcast_to(scale.astype(np.float64).reshape(-1), (channels,))
    mult, shift = output_multipliers(list(acc_scale / np.float64(out.scale)))
    lo, hi = activation_bounds(act, ctx.constants, out)
    bias_inputs: list[str] = []
    if bias is not None:
        if bias.size not in (1, channels):
            raise NotFusable("the bias is not per channel")
        full = np.broadcast_to(bias.reshape(-1), (channels,))
        bias_inputs = [ctx.constant(f"{node.label}_bias_i32", bias_to_int32(full, acc_scale))]
    w_name = ctx.constant(f"{node.label}_weight_i8", weights)
    if conv:
        attrs = {**_conv_attrs(ctx, node, tuple(weights.shape[2:])),
                 "x_zero_point": int(a_zp.reshape(())), "multiplier": mult, "shift": shift,
                 **_stage(out, lo, hi)}
        _finish(ctx, report, "QConv", [node.inputs[0], w_name, *bias_inputs], chain, attrs)
    else:
        if weights.ndim != 2:
            raise NotFusable("B is not a constant matrix")
        attrs = {"a_zero_point": int(a_zp.reshape(())), "multiplier": mult, "shift": shift,
                 **_stage(out, lo, hi)}
        _finish(ctx, report, "QMatMul", [node.inputs[0], w_name, *bias_inputs], chain, attrs)


def _zero_point(ctx: FusionContext, node: Node, index: int, what: str) -> QuantParams:
    """Return the (scale-less) parameters of MatMulInteger input `index - 2`'s zero point."""
    name = _input(node, index)
    value = ctx.constants.get(name) if name else None
    dtype = ctx.dtype_of(node.inputs[index - 2])
    if (name and (value is None or value.size != 1)) or dtype not in EIGHT_BIT:
        raise NotFusable(f"the {what} zero point is not a constant scalar, or the {what} is "
                         "not 8-bit")
    assert dtype is not None
    return QuantParams(1.0, int(value.reshape(())) if value is not None else 0, dtype)


def _dynamic_integer_product(ctx: FusionContext, node: Node, report: PassReport) -> None:
    """MatMulInteger of two computed tensors with constant per-tensor zero points."""
    ap = _zero_point(ctx, node, 2, "input")
    bp = _zero_point(ctx, node, 3, "second input")
    b_shape = ctx.shape_of(node.inputs[1])
    if b_shape is None or len(b_shape) < 2:
        raise NotFusable("B is computed but not of static rank >= 2")
    chain, scale, bias, act, out = _integer_chain(ctx, node)
    if scale.size != 1 or bias is not None:
        raise NotFusable("a product of two computed tensors is fused with one requantization "
                         "scale and no bias")
    mult, shift = output_multipliers([float(scale.reshape(())) / float(out.scale)])
    lo, hi = activation_bounds(act, ctx.constants, out)
    attrs = {"a_zero_point": ap.zero_point, "b_zero_point": bp.zero_point,
             "multiplier": mult, "shift": shift, **_stage(out, lo, hi)}
    _finish(ctx, report, "QMatMul", [node.inputs[0], node.inputs[1]], chain, attrs)


def _scalar_operand_table(ctx: FusionContext, node: Node, report: PassReport) -> bool:
    """Make a QLinearAdd/QLinearMul with one constant one-value operand (x + c, x * c: a
    function of x alone) a QTable computed by running the node with the reference; return
    False when neither operand is such a constant."""
    a, b = node.inputs[0], node.inputs[3]
    constant = [name for name in (a, b) if name in ctx.constants]
    if len(constant) != 1 or ctx.constants[constant[0]].size != 1:
        return False
    source = b if constant[0] == a else a
    dtype = ctx.dtype_of(source)
    if dtype not in EIGHT_BIT or ctx.dtype_of(node.outputs[0]) not in EIGHT_BIT:
        raise NotFusable("the operands or the result are not 8-bit")
    assert dtype is not None
    out = ctx.dtype_of(node.outputs[0])
    assert out is not None
    opsets = {node.domain: node.version or 1}
    table = table_of([node], ctx.constants, source, dtype, node.outputs[0], opsets)
    inputs = [source, ctx.constant(f"{node.label}_table", table)]
    _finish(ctx, report, "QTable", inputs, [node], {"to": int(out)})
    return True


_Operand = tuple[str, QuantParams, tuple[int, ...]]
"""A QLinearAdd/QLinearMul input: its name, quantization parameters and static shape."""


def _binary_operands(ctx: FusionContext, node: Node, report: PassReport
                     ) -> tuple[_Operand, _Operand, QuantParams] | None:
    """Return a QLinearAdd's or QLinearMul's two operands and its output parameters; None
    when the node became a table instead (one constant one-value operand)."""
    if _scalar_operand_table(ctx, node, report):
        return None
    ap = _params(ctx, node, 1, 2, "first input")
    bp = _params(ctx, node, 4, 5, "second input")
    yp = _params(ctx, node, 6, 7, "output")
    a, b = node.inputs[0], node.inputs[3]
    shape_a, shape_b = ctx.shape_of(a), ctx.shape_of(b)
    if shape_a is None or shape_b is None:
        raise NotFusable("the inputs do not have static shapes")
    return (a, ap, shape_a), (b, bp, shape_b), yp


def _qlinear_add(ctx: FusionContext, node: Node, report: PassReport) -> None:
    operands = _binary_operands(ctx, node, report)
    if operands is None:
        return
    first, second, yp = operands
    (a, ap, shape_a), (b, bp, shape_b) = (_full_rank(ctx, node, first, second),
                                          _full_rank(ctx, node, second, first))
    if shape_a != shape_b and (last_axis_broadcast(shape_b, shape_a)
                               or a in ctx.constants and per_channel_broadcast(shape_b, shape_a)):
        (a, ap, shape_a), (b, bp, shape_b) = (b, bp, shape_b), (a, ap, shape_a)
    if shape_a != shape_b and not (last_axis_broadcast(shape_a, shape_b) or (
            b in ctx.constants and per_channel_broadcast(shape_a, shape_b))):
        raise NotFusable("the inputs have neither the same static shape nor one along the "
                         "other's last axis [1, ..., H] or a constant per channel "
                         "[1, C, 1, ...] (broadcasting add)")
    ma, mb, shift = add_multipliers(float(np.float32(ap.scale) / np.float32(yp.scale)),
                                    float(np.float32(bp.scale) / np.float32(yp.scale)))
    attrs = {"a_zero_point": ap.zero_point, "b_zero_point": bp.zero_point,
             "multiplier_a": ma, "multiplier_b": mb, "shift": shift, **_stage(yp)}
    _finish(ctx, report, "QAdd", [a, b], [node], attrs)


def _qlinear_pool(ctx: FusionContext, node: Node, report: PassReport) -> None:
    if attr_int(node, "channels_last", 0):
        raise NotFusable("channels_last pooling runs on the host")
    xp = _params(ctx, node, 1, 2, "input")
    yp = _params(ctx, node, 3, 4, "output")
    shape = ctx.shape_of(node.inputs[0])
    if shape is None or len(shape) < 3:
        raise NotFusable("pooling of a non-static or non-spatial input")
    count_pad = bool(attr_int(node, "count_include_pad", 0))
    geometry = pool_geometry(node, shape, global_pool=node.op_type == "QLinearGlobalAveragePool",
                             count_include_pad=count_pad)
    attrs = {**geometry, "count_include_pad": int(count_pad), "x_zero_point": xp.zero_point,
             "scale": float(np.float32(xp.scale) / np.float32(yp.scale)), **_stage(yp)}
    _finish(ctx, report, "QAveragePool", [node.inputs[0]], [node], attrs)


def _integer_max_pool(ctx: FusionContext, node: Node, report: PassReport) -> None:
    dtype = ctx.dtype_of(node.inputs[0])
    if dtype not in EIGHT_BIT:
        return  # a float MaxPool: the QDQ fusion's business
    shape = ctx.shape_of(node.inputs[0])
    if shape is None or len(shape) < 3:
        raise NotFusable("pooling of a non-static or non-spatial input")
    if len([o for o in node.outputs if o]) != 1:
        raise NotFusable("MaxPool's Indices output runs on the host")
    geometry = pool_geometry(node, shape, global_pool=False, count_include_pad=False)
    assert dtype is not None
    info = np.iinfo(dtype.numpy)
    attrs = {**geometry, "y_lo": int(info.min), "y_hi": int(info.max)}
    _finish(ctx, report, "QMaxPool", [node.inputs[0]], [node], attrs)


def _qlinear_lookup(ctx: FusionContext, node: Node, report: PassReport) -> None:
    xp = _params(ctx, node, 1, 2, "input")
    yp = _params(ctx, node, 3, 4, "output")
    if xp.dtype != yp.dtype or ctx.dtype_of(node.inputs[0]) != xp.dtype:
        raise NotFusable("the input and output types differ from the zero points' types")
    opsets = {node.domain: node.version or 1}
    table = table_of([node], ctx.constants, node.inputs[0], xp.dtype, node.outputs[0], opsets)
    inputs = [node.inputs[0], ctx.constant(f"{node.label}_table", table)]
    _finish(ctx, report, "QTable", inputs, [node], {"to": int(yp.dtype)})


def _full_rank(ctx: FusionContext, node: Node, operand: _Operand, other: _Operand) -> _Operand:
    """Return a constant operand that broadcasts over `other` neither per channel nor along
    its last axis as the constant `expand_constant_operand.expanded_shape` gives it: of
    `other`'s rank (leading 1s: a layer scale [C, 1, 1] times [N, C, H, W] is per channel
    [1, C, 1, 1]) or, where that is not enough, of `other`'s whole shape (a rotary
    embedding's cos/sin table [1, 1, S, D] times the queries [1, H, S, D]: every element
    stored, exact); any other operand as it is."""
    name, params, shape = operand
    if name not in ctx.constants:
        return operand
    full = expanded_shape(tuple(shape), tuple(other[2]))
    if full is None:
        return operand
    value = ctx.constants[name]
    padded = value.reshape((1,) * (len(full) - value.ndim) + value.shape)
    data = np.ascontiguousarray(np.broadcast_to(padded, full))
    return ctx.constant(f"{node.label}_{name}", data), params, full


def _qlinear_mul(ctx: FusionContext, node: Node, report: PassReport) -> None:
    operands = _binary_operands(ctx, node, report)
    if operands is None:
        return
    first, second, yp = operands
    (a, ap, shape_a), (b, bp, shape_b) = (_full_rank(ctx, node, first, second),
                                          _full_rank(ctx, node, second, first))
    if shape_a != shape_b and (per_channel_broadcast(shape_b, shape_a)
                               or last_axis_broadcast(shape_b, shape_a)):
        (a, ap, shape_a), (b, bp, shape_b) = (b, bp, shape_b), (a, ap, shape_a)
    if (shape_a != shape_b and not per_channel_broadcast(shape_a, shape_b)
            and not last_axis_broadcast(shape_a, shape_b)):
        raise NotFusable(f"the inputs {list(shape_a)} and {list(shape_b)} are neither the "
                         "same shape nor one per channel [N|1, C, 1, ...] or along the last "
                         "axis [1, ..., H] of the other")
    real = np.float32(np.float32(ap.scale) * np.float32(bp.scale)) / np.float32(yp.scale)
    (mult,), (shift,) = output_multipliers([float(real)])
    attrs = {"a_zero_point": ap.zero_point, "b_zero_point": bp.zero_point,
             "multiplier": mult, "shift": shift, **_stage(yp)}
    _finish(ctx, report, "QMul", [a, b], [node], attrs)


Handler = Callable[[FusionContext, Node, PassReport], None]
_HANDLERS: dict[tuple[str, str], Handler] = {
    ("", "QLinearConv"): _qlinear_conv,
    ("", "QLinearMatMul"): _qlinear_matmul,
    ("com.microsoft", "QGemm"): _qgemm,
    ("", "MatMulInteger"): _integer_product,
    ("", "ConvInteger"): _integer_product,
    ("com.microsoft", "QLinearAdd"): _qlinear_add,
    ("com.microsoft", "QLinearGlobalAveragePool"): _qlinear_pool,
    ("com.microsoft", "QLinearAveragePool"): _qlinear_pool,
    ("", "MaxPool"): _integer_max_pool,
    ("com.microsoft", "QLinearSigmoid"): _qlinear_lookup,
    ("com.microsoft", "QLinearLeakyRelu"): _qlinear_lookup,
    ("com.microsoft", "QLinearMul"): _qlinear_mul,
    ("com.microsoft", "QLinearConcat"): qlinear_concat,
}
_INTEGER_HANDLERS = {key: _HANDLERS[key] for key in (("", "MatMulInteger"), ("", "ConvInteger"))}
