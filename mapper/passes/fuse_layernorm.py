"""Layer normalization on the accelerator: the normalizing part of a LayerNorm over the last
axis becomes one systolic.QLayerNorm (the LAYERNORM instruction); gamma and beta stay the
element-wise Mul and Add of a constant along the last axis that `fuse_qdq` makes QMul
(ADD `mul`) and QAdd (ADD `b_broadcast`).

Algebra (docs/numeric-contract.md, "Layer normalization"). With x = s_x (q - z_x) over a row
of H elements, d_e = q_e - z_x, S1 = sum d, S2 = sum d^2:
x_e - mean = s_x (H d_e - S1) / H and var = s_x^2 (H S2 - S1^2) / H^2, so
(x_e - mean) / sqrt(var + eps) = (H d_e - S1) / sqrt(H S2 - S1^2 + H^2 eps / s_x^2): the
integer eps field is rhe(H^2 eps / s_x^2) (it must fit 32 bits unsigned, else the layer
stays on the host with that reason). LAYERNORM's p_e is 2^16 times the normalized value, so
the output stage's (multiplier, shift) are those of 1 / (2^16 s_y), s_y the normalized
tensor's scale (its QuantizeLinear's). Not bit-exact with the float chain: one reciprocal
square root per row to a relative error below 2^-15, then the output stage's rounding.

Two functions, two places in the pipeline (`pipeline.py`):

- `split_layernorm` (before quantization): LayerNormalization(x, scale, bias) of constants
  (float, or read through a per-tensor DequantizeLinear: a QDQ model's) over the last axis
  becomes LayerNormalization(x, 1) -> Mul(scale) -> Add(bias) (float constants; Mul and Add
  left out for a scale of ones and a zero or missing bias, read through DequantizeLinear
  nodes or not: LayerNormalization(x, 1) then), so the normalized tensor is a
  value of its own: post-training quantization calibrates it (`quantize_float`; in a
  quantized model the island `layernorm_ptq.layernorm_island` between the model's
  DequantizeLinear and QuantizeLinear);
- `fuse_layernorm` (on the quantized graph, before `normalize_qoperator`): every chain
  `layernorm_match.match_layernorm` finds whose input is read through a DequantizeLinear of
  an 8-bit per-tensor activation and whose result is read by one QuantizeLinear alone
  becomes QLayerNorm(x_q) writing that QuantizeLinear's output. The chain's inner Q/DQ
  pairs (a quantized mean or variance) are absorbed: the instruction computes the sums
  exactly. A chain that does not qualify stays on the host; its nodes say why.
"""

import dataclasses

import numpy as np

from systolic.ir import Model, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_int, make_node
from systolic.mapper.passes.layernorm_match import (
    LAYERNORM_NOTE,
    LayerNormChain,
    match_layernorm,
    may_hold_layernorm,
)
from systolic.mapper.passes.quant_params import (
    EIGHT_BIT,
    NotFusable,
    QuantParams,
    output_multipliers,
    per_tensor_params,
)
from systolic.mapper.passes.report import PassReport
from systolic.reference.ops.op_systolic_qlayernorm import MAX_ROW_LENGTH

__all__ = ["eps_field", "fuse_layernorm", "split_layernorm"]

EPS_MAX = 2**32 - 1
NORMALIZED_ONE = 1 << 16
"""LAYERNORM's p_e holds the normalized value in units of 2^-16."""


def eps_field(eps: float, length: int, x_scale: float) -> int:
    """Return LAYERNORM's eps, rhe(H^2 eps / s_x^2) (float64); NotFusable when it does not fit
    32 bits unsigned or eps is negative."""
    value = float(np.rint(np.float64(length) ** 2 * np.float64(eps)
                          / np.float64(np.float32(x_scale)) ** 2))
    if not 0 <= value <= EPS_MAX:
        raise NotFusable(f"{LAYERNORM_NOTE}: eps {eps:g} at input scale {x_scale:g} over rows of "
                         f"{length} is {value:.4g} in LAYERNORM's units (H^2 eps / s_x^2), "
                         "outside its 32-bit eps field: it runs on the host")
    return int(value)


def split_layernorm(model: Model, report: PassReport,
                    refused: dict[str, str] | None = None) -> Model:  # fmt: skip
    """Return `model` with LayerNormalization(x, scale, bias) of float constants over the last
    axis split into LayerNormalization(x, 1) -> Mul(scale) -> Add(bias) (module docstring).
    (`refused`: taken for symmetry with the other rewrites; a split refuses nothing.)"""
    if not any(n.op_type == "LayerNormalization" for n in model.graph.nodes):
        return model
    ctx = FusionContext(model.graph)
    for node in model.graph.nodes:
        if node.domain != "" or node.op_type != "LayerNormalization":
            continue
        scale = _float_constant(ctx, node.inputs[1])
        bias_name = node.inputs[2] if len(node.inputs) > 2 else ""
        bias = _float_constant(ctx, bias_name) if bias_name else None
        shape = ctx.shape_of(node.inputs[0])
        if (scale is None or (bias_name and bias is None) or any(o for o in node.outputs[1:])
                or not shape or attr_int(node, "axis", -1) % len(shape) != len(shape) - 1):
            continue
        ones = np.ones(scale.shape, np.float32)
        if np.array_equal(scale, ones) and (bias is None or not np.any(bias)):
            if node.inputs[1] not in ctx.constants or bias_name:  # through DequantizeLinear
                _unit(ctx, node, ones)
            continue
        _split(ctx, node, scale, bias if bias is not None and np.any(bias) else None)
    return dataclasses.replace(model, graph=ctx.result())


def _float_constant(ctx: FusionContext, name: str) -> np.ndarray | None:
    """Return float32 constant `name`, or the value of a DequantizeLinear of a constant with a
    per-tensor scale and zero point (a QDQ model's gamma and beta), else None."""
    if name in ctx.constants:
        value = ctx.constants[name]
        return value if value.dtype == np.float32 else None
    dq = ctx.producer(name, "DequantizeLinear")
    if dq is None or any(n not in ctx.constants for n in dq.inputs if n):
        return None
    q, scale = ctx.constants[dq.inputs[0]], ctx.constants[dq.inputs[1]]
    zero = ctx.constants[dq.inputs[2]] if len(dq.inputs) > 2 and dq.inputs[2] else np.zeros(1)
    if scale.size != 1 or zero.size != 1 or q.dtype.kind not in "iu":
        return None
    real = (q.astype(np.float64) - float(zero.reshape(-1)[0])) * float(scale.reshape(-1)[0])
    return real.astype(np.float32)


def _unit(ctx: FusionContext, node: Node, ones: np.ndarray) -> None:
    """Make LayerNormalization `node`, whose scale is 1 and bias 0 (or absent) but read
    through DequantizeLinear nodes (a QDQ model of an untrained or unit-initialised norm),
    read a float constant of ones and no bias, the form `fuse_layernorm` takes."""
    name = node.name or node.label
    unit = ctx.constant(f"{name}_unit_scale", ones)
    ctx.replace([node], dataclasses.replace(node, inputs=(node.inputs[0], unit)), at=node)


def _split(ctx: FusionContext, node: Node, scale: np.ndarray,
           bias_value: np.ndarray | None) -> None:  # fmt: skip
    name = node.name or node.label
    ones = ctx.constant(f"{name}_unit_scale", np.ones(scale.shape, np.float32))
    gamma = ctx.constant(f"{name}_gamma_value", scale)
    bias = ctx.constant(f"{name}_beta_value", bias_value) if bias_value is not None else ""
    normalized = ctx.namer(f"{name}_normalized")
    scaled = ctx.namer(f"{name}_scaled") if bias else node.outputs[0]
    nodes = [
        dataclasses.replace(node, name=name, inputs=(node.inputs[0], ones),
                            outputs=(normalized,)),
        make_node("Mul", (normalized, gamma), (scaled,), name=ctx.namer(f"{name}_gamma")),
    ]
    if bias:
        nodes.append(make_node("Add", (scaled, bias), (node.outputs[0],),
                               name=ctx.namer(f"{name}_beta")))
    for new in nodes:
        ctx.replace([node], new, at=node)


def fuse_layernorm(model: Model, report: PassReport,
                   refused: dict[str, str] | None = None) -> Model:  # fmt: skip
    """Return `model` with every quantized layer normalization chain replaced by
    systolic.QLayerNorm (module docstring). The nodes of a chain that stays are noted with
    the reason, and put in `refused` (label -> reason) when given: later passes note their
    own patterns on the same nodes, the pipeline notes these again at the end."""
    if not may_hold_layernorm(model.graph):
        return model
    ctx = FusionContext(model.graph)
    for node in model.graph.nodes:
        if ctx.is_scheduled(node):
            continue
        try:
            chain = match_layernorm(ctx, node)
            if chain is not None:
                _fuse(ctx, chain, report)
        except NotFusable as reason:
            why = str(reason)
            if not why.startswith(LAYERNORM_NOTE):  # a parameter check's own words
                why = f"{LAYERNORM_NOTE}: {why}: the layer normalization runs on the host"
            for member in _members(ctx, node):
                report.note(member.label, why)
                if refused is not None:
                    refused[member.label] = why
    return dataclasses.replace(model, graph=ctx.result())


def _members(ctx: FusionContext, end: Node) -> list[Node]:
    """The nodes a refused chain ending at `end` takes: those of the chain's kinds before it,
    up to its input (the value its Subs subtract from: its producer is not the chain's)."""
    kinds = ("Sub", "Pow", "Mul", "ReduceMean", "GlobalAveragePool", "Add", "Sqrt",
             "Reciprocal", "QLinearAdd", "QuantizeLinear", "DequantizeLinear")

    def walk(stop: set[str]) -> list[Node]:
        found, todo = [end], [end]
        while todo:
            for name in todo.pop().inputs:
                producer = ctx.producers.get(name)
                if (producer is not None and name not in stop and producer.op_type in kinds
                        and all(producer is not f for f in found)):
                    found.append(producer)
                    todo.append(producer)
        return found

    inputs = {n.inputs[0] for n in walk(set()) if n.op_type == "Sub" and n.inputs}
    return [n for n in walk(inputs) if n.op_type not in ("QuantizeLinear", "DequantizeLinear")]


def _fuse(ctx: FusionContext, chain: LayerNormChain, report: PassReport) -> None:
    dq = ctx.producer(chain.x, "DequantizeLinear")
    if dq is None or dq.inputs[0] in ctx.constants:
        raise NotFusable(f"{LAYERNORM_NOTE}: the input is not dequantized from an 8-bit tensor: "
                         "the layer normalization runs in float on the host")
    zp = dq.inputs[2] if len(dq.inputs) > 2 and dq.inputs[2] else None
    xp = per_tensor_params(ctx.constants, dq.inputs[1], zp, "layer normalization input")
    if ctx.dtype_of(dq.inputs[0]) != xp.dtype:
        raise NotFusable(f"{LAYERNORM_NOTE}: the input is not an 8-bit tensor")
    q = _output_quantizer(ctx, chain)
    yp = per_tensor_params(ctx.constants, q.inputs[1],
                           q.inputs[2] if len(q.inputs) > 2 and q.inputs[2] else None,
                           "normalized output")
    if ctx.dtype_of(q.outputs[0]) != yp.dtype:
        raise NotFusable(f"{LAYERNORM_NOTE}: the normalized output's type is not its zero "
                         "point's")
    if not 1 <= chain.length <= MAX_ROW_LENGTH:
        raise NotFusable(f"{LAYERNORM_NOTE}: rows of {chain.length} elements (LAYERNORM takes "
                         f"1 .. {MAX_ROW_LENGTH})")
    name = chain.end.name or chain.end.label
    attrs = _attrs(chain, xp, yp)
    new = ctx.systolic_node("QLayerNorm", [dq.inputs[0]], q.outputs[0], name, attrs)
    ctx.replace([*chain.nodes, q], new, at=q)
    report.fused([n.label for n in (*chain.nodes, q)], f"systolic.QLayerNorm {new.name!r}")


def _output_quantizer(ctx: FusionContext, chain: LayerNormChain) -> Node:
    try:
        q = ctx.sole_reader(chain.normalized)
    except NotFusable as why:
        raise NotFusable(f"{LAYERNORM_NOTE}: the normalized value is not quantized by one "
                         f"QuantizeLinear ({why}): the layer normalization runs in float on "
                         "the host") from None
    if q.op_type != "QuantizeLinear" or q.domain != "":
        raise NotFusable(f"{LAYERNORM_NOTE}: the normalized value is read by {q.op_type}, not "
                         "quantized by a QuantizeLinear: the layer normalization runs in float "
                         "on the host")
    return q


def _attrs(chain: LayerNormChain, xp: QuantParams, yp: QuantParams) -> dict[str, object]:
    if xp.dtype not in EIGHT_BIT or yp.dtype not in EIGHT_BIT:
        raise NotFusable(f"{LAYERNORM_NOTE}: input and output must be 8-bit")
    eps = eps_field(chain.eps, chain.length, xp.scale)
    (mult,), (shift,) = output_multipliers([1.0 / (NORMALIZED_ONE * float(np.float32(yp.scale)))])
    low, high = yp.range
    return {"axis": -1, "x_zero_point": xp.zero_point, "eps": eps, "multiplier": mult,
            "shift": shift, "y_zero_point": yp.zero_point, "y_type": int(yp.dtype),
            "y_lo": low, "y_hi": high}
