"""QDQ fusion: DequantizeLinear -> float op -> [Relu/Clip] -> QuantizeLinear patterns become
the systolic integer ops (section C of the shared contracts).

- DQ(x) -> Conv(DQ(W), [DQ(B) | B]) -> [Relu|Clip] -> Q  becomes  QConv
- DQ(a) -> Gemm(DQ(B), [C]) / MatMul(DQ(B)) [-> Add(bias)] -> [Relu|Clip] -> Q  becomes QMatMul
  (MatMul: B a constant of rank >= 2, batched [..., K, N] weights included, or a computed
  tensor read through its own DequantizeLinear, the attention products Q·K^T and scores·V,
  with any per-tensor zero points: the lowering extends the reduction for the zero points'
  terms when they are not 0 in the int8 domain, see `lowering/asymmetric_product.py`)
- DQ(a), DQ(b) -> Add (or a two-input Sum) -> [Relu|Clip] -> Q  becomes  QAdd: a and b
  computed, of the same shape, or b an 8-bit constant vector along a's last axis ([H], [1, H],
  [1, 1, H] ... of more than one element: LayerNorm's beta; the constant goes to memory) or
  per channel ([1, C, 1, ...]: a batch norm's shift, `channel_affine`)
- DQ(a), DQ(b) -> Sub -> [Relu|Clip] -> Q  becomes  QAdd with B's multiplier negated (a
  negative multiplier subtracts): a and b computed, of the same shape, or b along a's last axis
- DQ(a), DQ(b) -> Mul -> [Relu|Clip] -> Q  becomes  QMul: a and b computed, of the same
  shape, one per channel [N|1, C, 1, ...] of the other [N, C, *spatial] (squeeze-excitation
  scaling) or one along the other's last axis [1, ..., H]; or b an 8-bit constant vector
  along a's last axis (LayerNorm's gamma) or per channel [1, C, 1, ...], or of a's own shape
  (a rotary embedding's cos/sin table, read from memory as QAdd's); multiplier and
  shift of s_a * s_b / s_y (float64) as the output stage's. A scalar constant is refused (it goes into a table)
- DQ(x) -> MaxPool -> [Relu|Clip] -> Q (same scale and zero point)  becomes  QMaxPool
- DQ(x) -> AveragePool / GlobalAveragePool -> Q  becomes  QAveragePool
- DQ(x) -> Flatten/Reshape/Transpose/Squeeze/Unsqueeze/Concat -> Q (same parameters)
  becomes the layout op on the integers.

Activations are per-tensor uint8/int8; weights int8 (or uint8) per tensor or per output
channel with their zero point subtracted (the result must fit 8 bits); a float bias is
quantized with scale x_scale * w_scale, an int32 bias whose DequantizeLinear already has that
scale is taken as is. A pattern that does not match stays as it is (host), with the reason
noted in the report. DequantizeLinear nodes left without readers are removed later (dead code).
"""

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from systolic.ir import DataType, Model, Node
from systolic.mapper.passes.constant_layout import transposed_copy
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_float, attr_int, attr_ints, attr_str
from systolic.mapper.passes.pool_geometry import pool_geometry
from systolic.mapper.passes.quant_params import (
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
from systolic.reference.kernels import quant
from systolic.reference.kernels.conv import resolve_auto_pad
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast, per_channel_broadcast

__all__ = ["LAYOUT_OPS", "fuse_qdq"]

LAYOUT_OPS = frozenset({"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat"})


def fuse_qdq(model: Model, report: PassReport) -> Model:
    """Return `model` with every matching QDQ pattern replaced by a systolic op."""
    ctx = FusionContext(model.graph)
    for node in model.graph.nodes:
        handler = _HANDLERS.get(node.op_type) if node.domain == "" else None
        if handler is None or ctx.is_scheduled(node):
            continue
        try:
            handler(ctx, node, report)
        except NotFusable as reason:
            report.note(node.label, str(reason))
    return dataclasses.replace(model, graph=ctx.result())


# -- pattern pieces -------------------------------------------------------------------------


def _dq_activation(ctx: FusionContext, name: str, what: str) -> tuple[str, QuantParams]:
    """Return (quantized source, parameters) of an activation read through DequantizeLinear."""
    dq = ctx.producer(name, "DequantizeLinear")
    if dq is None:
        raise NotFusable(f"the {what} does not come from a DequantizeLinear")
    zp = dq.inputs[2] if len(dq.inputs) > 2 else None
    return dq.inputs[0], per_tensor_params(ctx.constants, dq.inputs[1], zp, what)


@dataclasses.dataclass(frozen=True)
class _Weights:
    values: np.ndarray  # the stored integers
    scale: np.ndarray  # float32, one per output channel
    zero_point: np.ndarray | None
    dq: Node


def _dq_weights(ctx: FusionContext, name: str, channel_axis: int) -> _Weights:
    """Return constant weights read through DequantizeLinear, per tensor or per channel
    along `channel_axis` (the output channels)."""
    dq = ctx.producer(name, "DequantizeLinear")
    if dq is None or dq.inputs[0] not in ctx.constants:
        raise NotFusable("the weights are not a constant read through DequantizeLinear")
    values = ctx.constants[dq.inputs[0]]
    if DataType.from_numpy(values.dtype) not in (DataType.INT8, DataType.UINT8):
        raise NotFusable(f"the weights are {values.dtype}, not int8 or uint8")
    scale = ctx.constants.get(dq.inputs[1])
    zp_name = dq.inputs[2] if len(dq.inputs) > 2 else ""
    zp = ctx.constants.get(zp_name) if zp_name else None
    if scale is None or (zp_name and zp is None):
        raise NotFusable("the weight scale or zero point is not a constant")
    channels = values.shape[channel_axis]
    if scale.size > 1:
        axis = attr_int(dq, "axis", 1)
        axis = axis + values.ndim if axis < 0 else axis
        if axis != channel_axis or scale.size != channels:
            raise NotFusable("the weights are quantized per axis along another axis than "
                             "the output channels")
    if attr_int(dq, "block_size", 0):
        raise NotFusable("block-quantized weights are not fused")
    full = np.broadcast_to(scale.astype(np.float32).reshape(-1), (channels,)).copy()
    return _Weights(values, full, zp, dq)


def _output_chain(ctx: FusionContext, node: Node) -> tuple[Node | None, Node, QuantParams]:
    """Return (activation or None, QuantizeLinear, output parameters) after `node`."""
    reader = ctx.sole_reader(node.outputs[0])
    act = None
    if is_activation(reader, ctx.constants) and reader.inputs[0] == node.outputs[0]:
        act = reader
        reader = ctx.sole_reader(act.outputs[0])
    if reader.op_type != "QuantizeLinear" or reader.domain != "":
        raise NotFusable("the output is not quantized by a QuantizeLinear")
    zp = reader.inputs[2] if len(reader.inputs) > 2 else None
    params = per_tensor_params(ctx.constants, reader.inputs[1], zp, "output")
    return act, reader, params


def _bias(ctx: FusionContext, name: str, scale: np.ndarray, what: str) -> tuple[np.ndarray,
                                                                               list[Node]]:
    """Return the int32 bias for accumulator scale `scale` (per channel, float64) and the
    DequantizeLinear it was read through (if any)."""
    shape = ctx.shape_of(name)
    if shape is None or int(np.prod(shape)) not in (1, scale.size):
        raise NotFusable(f"the {what} is not one value per output channel")
    dq = ctx.producer(name, "DequantizeLinear")
    if dq is not None and dq.inputs[0] in ctx.constants:
        raw = ctx.constants[dq.inputs[0]]
        b_scale = ctx.constants.get(dq.inputs[1])
        zp_name = dq.inputs[2] if len(dq.inputs) > 2 else ""
        zp = ctx.constants.get(zp_name) if zp_name else np.zeros((), raw.dtype)
        if b_scale is None or zp is None:
            raise NotFusable(f"the {what} scale or zero point is not a constant")
        b_scale32 = np.broadcast_to(b_scale.astype(np.float32).reshape(-1), scale.shape)
        if (raw.dtype == np.int32 and not np.any(zp) and
                np.array_equal(b_scale32, scale.astype(np.float32))):
            return np.broadcast_to(raw.reshape(-1), scale.shape).astype(np.int32), [dq]
        axis = attr_int(dq, "axis", 1)
        real = quant.dequantize(raw, b_scale, zp, axis=axis if b_scale.size > 1 else None)
        return bias_to_int32(np.broadcast_to(real.reshape(-1), scale.shape), scale), [dq]
    value = ctx.constants.get(name)
    if value is None:
        raise NotFusable(f"the {what} is not a constant")
    return bias_to_int32(np.broadcast_to(value.reshape(-1), scale.shape), scale), []


def _stage_attrs(act: Node | None, ctx: FusionContext, out: QuantParams) -> dict[str, object]:
    lo, hi = activation_bounds(act, ctx.constants, out)
    return {"y_zero_point": out.zero_point, "y_type": int(out.dtype), "y_lo": lo, "y_hi": hi}


def _finish(ctx: FusionContext, report: PassReport, op_type: str, inputs: list[str],
            chain: list[Node | None], attrs: dict[str, object], extra: list[Node]) -> None:
    anchor = chain[0]
    q = chain[-1]
    assert anchor is not None and q is not None
    nodes = [n for n in chain if n is not None]
    new = ctx.systolic_node(op_type, inputs, q.outputs[0], anchor.name or anchor.label, attrs)
    ctx.replace(nodes, new, at=q)
    report.fused([n.label for n in nodes + extra], f"systolic.{op_type} {new.name!r}")


# -- handlers -------------------------------------------------------------------------------


def _conv(ctx: FusionContext, node: Node, report: PassReport) -> None:
    x_q, xp = _dq_activation(ctx, node.inputs[0], "input")
    shape = ctx.shape_of(node.inputs[0])
    if shape is None or len(shape) not in (3, 4):
        raise NotFusable("only 1-D and 2-D convolutions of static shape are fused")
    w = _dq_weights(ctx, node.inputs[1], 0)
    act, q, yp = _output_chain(ctx, node)
    acc_scale = np.float64(xp.scale) * w.scale.astype(np.float64)
    extra = [w.dq]
    bias_inputs: list[str] = []
    if len(node.inputs) > 2 and node.inputs[2]:
        bias, dqs = _bias(ctx, node.inputs[2], acc_scale, "bias")
        extra += dqs
        bias_inputs = [ctx.constant(f"{node.label}_bias_i32", bias)]
    weights = effective_weights(w.values, w.zero_point, 0)
    mult, shift = output_multipliers(list(acc_scale / np.float64(yp.scale)))
    kernel = tuple(int(k) for k in weights.shape[2:])
    rank = len(kernel)
    strides = (attr_ints(node, "strides") or (1,) * rank)
    dilations = (attr_ints(node, "dilations") or (1,) * rank)
    pads = resolve_auto_pad(attr_str(node, "auto_pad", "NOTSET"), shape[2:], kernel,
                            strides, dilations,
                            attr_ints(node, "pads"))
    attrs = {"strides": strides, "pads": tuple(pads), "dilations": dilations,
             "group": attr_int(node, "group", 1),
             "x_zero_point": xp.zero_point, "multiplier": mult, "shift": shift,
             **_stage_attrs(act, ctx, yp)}
    w_name = ctx.constant(f"{node.label}_weight_i8", weights)
    _finish(ctx, report, "QConv", [x_q, w_name, *bias_inputs], [node, act, q], attrs, extra)


def _matmul_like(ctx: FusionContext, node: Node, report: PassReport) -> None:
    a_q, ap = _dq_activation(ctx, node.inputs[0], "input")
    a_shape = ctx.shape_of(node.inputs[0])
    if node.op_type == "Gemm":
        if attr_int(node, "transA", 0):
            raise NotFusable("Gemm with transA is not fused")
        trans_b = bool(attr_int(node, "transB", 0))
        alpha = attr_float(node, "alpha", 1.0)
        beta = attr_float(node, "beta", 1.0)
        if alpha <= 0:
            raise NotFusable("Gemm with alpha <= 0 is not fused")
    else:
        trans_b, alpha, beta = False, 1.0, 1.0
        b_dq = ctx.producer(node.inputs[1], "DequantizeLinear")
        if b_dq is not None and b_dq.inputs[0] not in ctx.constants:
            _dynamic_matmul(ctx, node, a_q, ap, report)
            return
    b_shape = ctx.shape_of(node.inputs[1])
    rank = len(b_shape) if b_shape is not None else 0
    if a_shape is None or len(a_shape) < 1 or rank < 2 or (node.op_type == "Gemm" and rank != 2):
        raise NotFusable("only constant weights of rank 2 (Gemm), or of rank >= 2 (MatMul), "
                         "with static shapes are fused")
    channel_axis = 0 if trans_b else rank - 1
    w = _dq_weights(ctx, node.inputs[1], channel_axis)
    act, q, yp = _output_chain_with_bias(ctx, node)
    acc_scale = np.float64(alpha) * np.float64(ap.scale) * w.scale.astype(np.float64)
    extra = [w.dq]
    bias_inputs: list[str] = []
    bias_name = node.inputs[2] if node.op_type == "Gemm" and len(node.inputs) > 2 else ""
    add = _bias_add(ctx, node)
    if add is not None:
        bias_name = next(n for n in add.inputs if n != node.outputs[0])
    if bias_name:
        if beta != 1.0:
            real = ctx.constants.get(bias_name)
            if real is None or real.size not in (1, acc_scale.size):
                raise NotFusable("a Gemm bias with beta != 1 must be a float constant with "
                                 "one value per output column")
            bias = bias_to_int32(beta * np.broadcast_to(real.reshape(-1), acc_scale.shape),
                                 acc_scale)
        else:
            bias, dqs = _bias(ctx, bias_name, acc_scale, "bias")
            extra += dqs
        bias_inputs = [ctx.constant(f"{node.label}_bias_i32", bias)]
    weights = effective_weights(w.values, w.zero_point, channel_axis)
    if trans_b:
        weights = transposed_copy(weights)
    mult, shift = output_multipliers(list(acc_scale / np.float64(yp.scale)))
    attrs = {"a_zero_point": ap.zero_point, "multiplier": mult, "shift": shift,
             **_stage_attrs(act, ctx, yp)}
    w_name = ctx.constant(f"{node.label}_weight_i8", weights)
    chain = [node, add, act, q]
    _finish(ctx, report, "QMatMul", [a_q, w_name, *bias_inputs], chain, attrs, extra)


def _dynamic_matmul(ctx: FusionContext, node: Node, a_q: str, ap: QuantParams,
                    report: PassReport) -> None:
    """Fuse a MatMul of two computed tensors (attention: Q·K^T, scores·V), any zero points."""
    b_q, bp = _dq_activation(ctx, node.inputs[1], "second input")
    a_shape, b_shape = ctx.shape_of(node.inputs[0]), ctx.shape_of(node.inputs[1])
    if a_shape is None or b_shape is None or len(b_shape) < 2 or len(a_shape) < 1:
        raise NotFusable("a product of two computed tensors is fused only with static shapes "
                         "and a second input of rank >= 2")
    act, q, yp = _output_chain_with_bias(ctx, node)
    n = b_shape[-1]
    real = np.float64(ap.scale) * np.float64(bp.scale)
    acc_scale = np.full(n, real, np.float64)
    extra: list[Node] = []
    bias_inputs: list[str] = []
    add = _bias_add(ctx, node)
    if add is not None:
        bias_name = next(name for name in add.inputs if name != node.outputs[0])
        bias, dqs = _bias(ctx, bias_name, acc_scale, "bias")
        extra += dqs
        bias_inputs = [ctx.constant(f"{node.label}_bias_i32", bias)]
    mult, shift = output_multipliers([float(real / np.float64(yp.scale))])
    attrs = {"a_zero_point": ap.zero_point, "b_zero_point": bp.zero_point,
             "multiplier": mult, "shift": shift, **_stage_attrs(act, ctx, yp)}
    chain = [node, add, act, q]
    _finish(ctx, report, "QMatMul", [a_q, b_q, *bias_inputs], chain, attrs, extra)


def _bias_add(ctx: FusionContext, node: Node) -> Node | None:
    """Return the Add of a constant per-column bias right after a MatMul, if any."""
    if node.op_type != "MatMul":
        return None
    readers = ctx.consumers.get(node.outputs[0], [])
    if len(readers) != 1 or node.outputs[0] in ctx.outputs:
        return None
    add = readers[0]
    if add.op_type != "Add" or add.domain != "":
        return None
    other = [n for n in add.inputs if n != node.outputs[0]]
    if len(other) != 1:
        return None
    value = ctx.constants.get(other[0])
    dq = ctx.producer(other[0], "DequantizeLinear")
    if value is None and (dq is None or dq.inputs[0] not in ctx.constants):
        return None
    shape = ctx.shape_of(other[0])
    if shape is None or len(shape) > 1 and any(d != 1 for d in shape[:-1]):
        return None
    return add


def _output_chain_with_bias(ctx: FusionContext, node: Node) -> tuple[Node | None, Node,
                                                                     QuantParams]:
    add = _bias_add(ctx, node)
    return _output_chain(ctx, add if add is not None else node)


WHOLE_CONSTANT_RANK = 4
"""Highest rank of a constant B of an Add's own shape that QAdd reads from memory: the
lowering places such a constant in its operand's layout group (mapper/lowering/layout_sets,
since 4c567ee), so a rank-4 one beside a row-major attention matrix (the scores of LeViT or
Swin plus their bias) is stored row-major like it (was 3 before; lane E's measurement)."""


def _constant_vector(ctx: FusionContext, a: tuple[str, str], b: tuple[str, str],
                     op: str) -> bool:
    """Order check for an element-wise op's operands (quantized source, float input): True
    when b is a constant along a's last axis or per channel [1, C, 1, ...] (more than one
    element: LayerNorm's gamma or beta, a batch norm's scale or shift) or, for an Add or a
    Mul, an 8-bit constant of a's own shape of rank <= WHOLE_CONSTANT_RANK (ViT's position
    embedding, a rotary embedding's cos/sin table), False when neither is a constant;
    NotFusable for any other constant."""
    constants = [q in ctx.constants for q, _ in (a, b)]
    if not any(constants):
        return False
    shape_a, shape_b = ctx.shape_of(a[1]), ctx.shape_of(b[1])
    if (op in ("Add", "Mul") and not constants[0] and shape_a is not None and shape_a == shape_b
            and len(shape_a) <= WHOLE_CONSTANT_RANK and math.prod(shape_b) > 1
            and ctx.constants[b[0]].dtype in (np.int8, np.uint8)):
        return True  # a whole-tensor constant (a position embedding), read from memory
    if (constants[0] or shape_a is None or shape_b is None or shape_a == shape_b
            or math.prod(shape_b) <= 1
            or not (last_axis_broadcast(shape_a, shape_b)
                    or per_channel_broadcast(shape_a, shape_b) and shape_b[0] == 1)
            or ctx.constants[b[0]].dtype not in (np.int8, np.uint8)):
        raise NotFusable(f"a{'n' if op == 'Add' else ''} {op} of a constant is fused only "
                         "with a vector along the other input's last axis or per channel "
                         "(a scalar constant goes into a table)")
    return True


def _ordered(ctx: FusionContext, node: Node) -> list[tuple[str, QuantParams, str]]:
    """Return (quantized source, parameters, float input) of a binary op's two inputs, a
    constant vector second."""
    operands = [(*_dq_activation(ctx, name, what), name)
                for name, what in zip(node.inputs, ("first input", "second input"), strict=True)]
    if operands[0][0] in ctx.constants and operands[1][0] not in ctx.constants:
        operands.reverse()
    return operands


def _add(ctx: FusionContext, node: Node, report: PassReport) -> None:
    if len(node.inputs) != 2:
        raise NotFusable("only a sum of two inputs is fused")
    (a_q, ap, a_in), (b_q, bp, b_in) = _ordered(ctx, node)
    shape_a, shape_b = ctx.shape_of(a_in), ctx.shape_of(b_in)
    if not _constant_vector(ctx, (a_q, a_in), (b_q, b_in), "Add") and shape_a != shape_b:
        if shape_a is not None and shape_b is not None and last_axis_broadcast(shape_b,
                                                                               shape_a):
            (a_q, ap), (b_q, bp) = (b_q, bp), (a_q, ap)
        elif shape_a is None or shape_b is None or not last_axis_broadcast(shape_a, shape_b):
            raise NotFusable("the Add's inputs have neither the same static shape nor one "
                             "along the other's last axis [1, ..., H]")
    act, q, yp = _output_chain(ctx, node)
    b_factor = np.float64(bp.scale) / np.float64(yp.scale) if _contributes(ctx, b_q, bp) else 0.0
    ma, mb, shift = add_multipliers(np.float64(ap.scale) / np.float64(yp.scale), b_factor)
    attrs = {"a_zero_point": ap.zero_point, "b_zero_point": bp.zero_point,
             "multiplier_a": ma, "multiplier_b": mb, "shift": shift,
             **_stage_attrs(act, ctx, yp)}
    _finish(ctx, report, "QAdd", [a_q, b_q], [node, act, q], attrs, [])


def _contributes(ctx: FusionContext, name: str, params: QuantParams) -> bool:
    """False when quantized input `name` is a constant equal to its zero point everywhere
    (a real 0: an attention-bias table still at its initial zeros), whose rescale factor then
    multiplies only zeros: the QAdd takes 0 for it instead of a factor the output stage may not
    represent (a bias of scale 1 added to scores of scale 3.5e-11); True otherwise."""
    value = ctx.constants.get(name)
    return value is None or bool(np.any(value.astype(np.int64) != params.zero_point))


def _sub(ctx: FusionContext, node: Node, report: PassReport) -> None:
    """a - b of two computed tensors (RepMixer's mixer(x) - norm(x), PoolFormer's pool(x) -
    x): the QAdd of `_add` with multiplier_b negated; b of a's shape or along its last axis
    (not swapped: the order matters). A constant operand is a table's or channel_affine's."""
    (a_q, ap), (b_q, bp) = (_dq_activation(ctx, name, what) for name, what in
                            zip(node.inputs, ("first input", "second input"), strict=True))
    if a_q in ctx.constants or b_q in ctx.constants:
        raise NotFusable("a Sub of a constant is fused as an activation table or a shift")
    shape_a, shape_b = ctx.shape_of(node.inputs[0]), ctx.shape_of(node.inputs[1])
    if (shape_a is None or shape_b is None
            or shape_a != shape_b and not last_axis_broadcast(shape_a, shape_b)):
        raise NotFusable("the Sub's inputs have neither the same static shape nor the second "
                         "along the first's last axis [1, ..., H]")
    act, q, yp = _output_chain(ctx, node)
    ma, mb, shift = add_multipliers(np.float64(ap.scale) / np.float64(yp.scale),
                                    np.float64(bp.scale) / np.float64(yp.scale))
    attrs = {"a_zero_point": ap.zero_point, "b_zero_point": bp.zero_point,
             "multiplier_a": ma, "multiplier_b": -mb, "shift": shift,
             **_stage_attrs(act, ctx, yp)}
    _finish(ctx, report, "QAdd", [a_q, b_q], [node, act, q], attrs, [])


def _mul(ctx: FusionContext, node: Node, report: PassReport) -> None:
    (a_q, ap, a_in), (b_q, bp, b_in) = _ordered(ctx, node)
    shape_a, shape_b = ctx.shape_of(a_in), ctx.shape_of(b_in)
    if shape_a is None or shape_b is None:
        raise NotFusable("the Mul's inputs do not have static shapes")
    if not _constant_vector(ctx, (a_q, a_in), (b_q, b_in), "Mul"):
        if shape_a != shape_b and (per_channel_broadcast(shape_b, shape_a)
                                   or last_axis_broadcast(shape_b, shape_a)):
            (a_q, ap, shape_a), (b_q, bp, shape_b) = (b_q, bp, shape_b), (a_q, ap, shape_a)
        if (shape_a != shape_b and not per_channel_broadcast(shape_a, shape_b)
                and not last_axis_broadcast(shape_a, shape_b)):
            raise NotFusable(f"the Mul's inputs {list(shape_a)} and {list(shape_b)} are "
                             "neither the same shape nor one per channel [N|1, C, 1, ...] or "
                             "along the last axis [1, ..., H] of the other")
    act, q, yp = _output_chain(ctx, node)
    (mult,), (shift,) = output_multipliers(
        [float(np.float64(ap.scale) * np.float64(bp.scale) / np.float64(yp.scale))])
    attrs = {"a_zero_point": ap.zero_point, "b_zero_point": bp.zero_point,
             "multiplier": mult, "shift": shift, **_stage_attrs(act, ctx, yp)}
    _finish(ctx, report, "QMul", [a_q, b_q], [node, act, q], attrs, [])


def _pool(ctx: FusionContext, node: Node, report: PassReport) -> None:
    x_q, xp = _dq_activation(ctx, node.inputs[0], "input")
    shape = ctx.shape_of(node.inputs[0])
    if shape is None or len(shape) < 3:
        raise NotFusable("pooling of a non-static or non-spatial input")
    if len([o for o in node.outputs if o]) != 1:
        raise NotFusable("MaxPool's Indices output runs on the host")
    act, q, yp = _output_chain(ctx, node)
    if node.op_type == "MaxPool":
        if not yp.same_as(xp):
            raise NotFusable("the MaxPool output is requantized (scale or zero point changes)")
        geometry = pool_geometry(node, shape, global_pool=False, count_include_pad=False)
        lo, hi = activation_bounds(act, ctx.constants, yp)
        _finish(ctx, report, "QMaxPool", [x_q], [node, act, q],
                {**geometry, "y_lo": lo, "y_hi": hi}, [])
        return
    count_pad = bool(attr_int(node, "count_include_pad", 0))
    geometry = pool_geometry(node, shape, global_pool=node.op_type == "GlobalAveragePool",
                             count_include_pad=count_pad)
    attrs = {**geometry, "count_include_pad": int(count_pad), "x_zero_point": xp.zero_point,
             "scale": float(np.float64(xp.scale) / np.float64(yp.scale)),
             **_stage_attrs(act, ctx, yp)}
    _finish(ctx, report, "QAveragePool", [x_q], [node, act, q], attrs, [])


def _layout(ctx: FusionContext, node: Node, report: PassReport) -> None:
    data_inputs = node.inputs if node.op_type == "Concat" else node.inputs[:1]
    sources: list[str] = []
    params: list[QuantParams] = []
    for name in data_inputs:
        source, p = _dq_activation(ctx, name, "input")
        sources.append(source)
        params.append(p)
    reader = ctx.sole_reader(node.outputs[0])
    if reader.op_type != "QuantizeLinear" or reader.domain != "":
        raise NotFusable("the output is not quantized by a QuantizeLinear")
    zp = reader.inputs[2] if len(reader.inputs) > 2 else None
    out = per_tensor_params(ctx.constants, reader.inputs[1], zp, "output")
    if not all(p.same_as(out) for p in params):
        raise NotFusable("the layout op's input and output quantization differ")
    inputs = tuple(sources) + tuple(node.inputs[len(data_inputs):])
    new = dataclasses.replace(node, inputs=inputs, outputs=(reader.outputs[0],))
    ctx.replace([node, reader], new, at=reader)
    report.record(node.label, "layout", reason="runs on integers (addressing or COPY)")
    report.record(reader.label, "removed", reason=f"requantizes {node.label!r}'s integers "
                  "with the same parameters")


Handler = Callable[[FusionContext, Node, PassReport], None]
_HANDLERS: dict[str, Handler] = {
    "Conv": _conv,
    "Gemm": _matmul_like,
    "MatMul": _matmul_like,
    "Add": _add,
    "Sum": _add,
    "Sub": _sub,
    "Mul": _mul,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "GlobalAveragePool": _pool,
    **{op: _layout for op in LAYOUT_OPS},
}
