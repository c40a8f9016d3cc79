"""Recognise layer normalization over the last axis in a graph: the part that normalizes,
`n = (x - mean(x)) / sqrt(var(x) + eps)`, without gamma and beta.

Two forms end in `n`:

- the decomposed form exporters write at opsets below 17 (PyTorch, paddle2onnx):
  `mean = ReduceMean(x, [-1])`, `d = Sub(x, mean)`, `sq = Pow(d, 2)` (or `Mul(d, d)`),
  `var = ReduceMean(sq, [-1])`, `ve = Add(var, eps)`, `s = Sqrt(ve)`, `n = Div(d, s)` (or
  `Mul(d, Reciprocal(s))`), both means with keepdims = 1 over the last axis alone (as -1 or
  rank - 1, an attribute or, from opset 18, a constant input; or the GlobalAveragePool
  `spatial_mean` makes of a rank-3 one). A QuantizeLinear ->
  DequantizeLinear pair of one scale and zero point between two steps (a QDQ model's
  quantized variance, say) is part of the chain, and so is a com.microsoft QLinearAdd of the
  constant eps (a QOperator model: DQ(QLinearAdd(Q(var), eps))). The constants (2, eps) may
  be read through a DequantizeLinear of a constant. Every value inside the chain must be
  read only by the chain (it is removed as a whole);
- LayerNormalization (opset 17) of constant scale 1 and no bias or a zero bias (the form
  `split_layernorm` leaves), over the last axis, with only its first output read.

`match_layernorm(ctx, node)` returns the `LayerNormChain` ending at `node`, None when `node`
cannot end one (not a Div, Mul or LayerNormalization, or not the right inputs), and raises
NotFusable with the reason when `node` ends a layer normalization that cannot be taken as a
whole (the reason starts with `LAYERNORM_NOTE`, so the report can say it).
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_float, attr_int, attr_ints
from systolic.mapper.passes.quant_params import NotFusable

__all__ = ["LAYERNORM_NOTE", "LayerNormChain", "last_axis", "match_layernorm", "may_hold_layernorm"]

LAYERNORM_NOTE = "LayerNorm"
"""How the reasons this module and `fuse_layernorm` give begin."""


@dataclasses.dataclass(frozen=True)
class LayerNormChain:
    """A layer normalization over the last axis: `normalized = (x - mean) / sqrt(var + eps)`
    of float value `x` (a DequantizeLinear's result in a quantized model), `length` elements
    per row; `nodes` are every node of it (inner Q/DQ pairs included), `end` the last."""

    x: str
    normalized: str
    eps: float
    length: int
    nodes: tuple[Node, ...]
    end: Node


class _NotThisForm(Exception):
    """The nodes of a backward walk are not a layer normalization's (no match)."""


class _Walk:
    """The backward walk of one decomposed chain: the nodes it took."""

    def __init__(self, ctx: FusionContext) -> None:
        self.ctx = ctx
        self.nodes: list[Node] = []
        self.variance = ""  # the value `var + eps` adds eps to (set by `_epsilon`)

    def value(self, name: str) -> str:
        """Return `name` with Q -> DQ pairs of one scale and zero point before it skipped
        (the pairs join the chain)."""
        while True:
            dq = self.ctx.producer(name, "DequantizeLinear")
            q = self.ctx.producer(dq.inputs[0], "QuantizeLinear") if dq is not None else None
            if dq is None or q is None or tuple(q.inputs[1:]) != tuple(dq.inputs[1:]):
                return name
            self.nodes += [dq, q]
            name = q.inputs[0]

    def step(self, name: str, *op_types: str) -> Node | None:
        """Return the producer of `name` (Q/DQ pairs skipped) when it is one of `op_types`;
        it joins the chain."""
        node = self.ctx.producers.get(self.value(name))
        if node is None or node.domain != "" or node.op_type not in op_types:
            return None
        self.nodes.append(node)
        return node

    def constant(self, name: str) -> float | None:
        """Return the one value of constant `name`, or of a DequantizeLinear of a constant."""
        constants = self.ctx.constants
        if name in constants:
            value = constants[name]
            return float(value.reshape(-1)[0]) if value.size == 1 else None
        dq = self.ctx.producer(name, "DequantizeLinear")
        if dq is None or any(n not in constants for n in dq.inputs if n):
            return None
        q, scale = constants[dq.inputs[0]], constants[dq.inputs[1]]
        zero = constants[dq.inputs[2]] if len(dq.inputs) > 2 and dq.inputs[2] else 0
        if q.size != 1 or np.size(scale) != 1:
            return None
        self.nodes.append(dq)
        return float((np.int64(q.reshape(-1)[0]) - np.int64(np.reshape(zero, -1)[0]))
                     * np.float64(np.reshape(scale, -1)[0]))


def may_hold_layernorm(graph: Graph) -> bool:
    """False when `graph` cannot hold a layer normalization `match_layernorm` finds (no Sqrt
    and no LayerNormalization): the passes skip it without building their context."""
    return any(node.op_type in ("Sqrt", "LayerNormalization") for node in graph.nodes)


def last_axis(ctx: FusionContext, node: Node, rank: int) -> bool:
    """True when ReduceMean `node` averages the last axis alone and keeps it (size 1); a
    GlobalAveragePool of a rank-3 tensor does (`spatial_mean` makes one of a variance's
    ReduceMean read by a QuantizeLinear)."""
    if node.op_type == "GlobalAveragePool":
        return rank == 3
    if attr_int(node, "keepdims", 1) != 1:
        return False
    axes = attr_ints(node, "axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = ctx.constants.get(node.inputs[1])
        axes = None if value is None else tuple(int(a) for a in value.reshape(-1))
    return axes is not None and len(axes) == 1 and axes[0] % rank == rank - 1


def _rows(ctx: FusionContext, x: str) -> tuple[int, int]:
    """Return (rank, length of the last axis) of `x`; NotFusable without a static shape."""
    shape = ctx.shape_of(x)
    if not shape:
        raise NotFusable(f"{LAYERNORM_NOTE}: the input {x!r} has no static shape of rank >= 1")
    return len(shape), shape[-1]


def match_layernorm(ctx: FusionContext, node: Node) -> LayerNormChain | None:
    """Return the layer normalization ending at `node` (module docstring), None when `node`
    ends none, NotFusable (with the reason) when it ends one that cannot be taken."""
    if node.domain != "":
        return None
    if node.op_type == "LayerNormalization":
        return _operator(ctx, node)
    if node.op_type not in ("Div", "Mul") or len(node.inputs) != 2:
        return None
    return _decomposed(ctx, node)


def _operator(ctx: FusionContext, node: Node) -> LayerNormChain:
    x = node.inputs[0]
    rank, length = _rows(ctx, x)
    axis = attr_int(node, "axis", -1)
    if axis % rank != rank - 1:
        raise NotFusable(f"{LAYERNORM_NOTE}: LayerNormalization over axes {axis % rank} .. "
                         f"{rank - 1} of a rank-{rank} tensor, not over the last axis alone "
                         "(LAYERNORM normalizes rows of the last axis): it runs on the host")
    if any(o for o in node.outputs[1:]):
        raise NotFusable(f"{LAYERNORM_NOTE}: the LayerNormalization's mean or inverse "
                         "deviation output is read: it runs on the host")
    scale = ctx.constants.get(node.inputs[1])
    bias = ctx.constants.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if scale is None or np.any(scale != 1) or (bias is not None and np.any(bias != 0)):
        raise NotFusable(f"{LAYERNORM_NOTE}: the LayerNormalization's scale and bias are not "
                         "float constants (split into QMul and QAdd only then): it runs on "
                         "the host")
    return LayerNormChain(x, node.outputs[0], attr_float(node, "epsilon", 1e-5), length,
                          (node,), node)


def _decomposed(ctx: FusionContext, end: Node) -> LayerNormChain | None:
    walk = _Walk(ctx)
    walk.nodes.append(end)
    if end.op_type == "Div":
        deviation, root = end.inputs
    else:  # Mul(d, Reciprocal(s)), either order
        found = [(i, r) for i, n in enumerate(end.inputs)
                 if (r := walk.step(n, "Reciprocal")) is not None]
        if len(found) != 1:
            return None
        (index, reciprocal), = found
        deviation, root = end.inputs[1 - index], reciprocal.inputs[0]
    sub = walk.step(deviation, "Sub")
    sqrt = walk.step(root, "Sqrt")
    if sub is None or sqrt is None:
        return None
    eps = _epsilon(walk, sqrt.inputs[0])
    var = walk.step(walk.variance, "ReduceMean", "GlobalAveragePool") if eps is not None else None
    if eps is None or var is None:
        return None
    try:
        x, rank, length = _mean_of(walk, sub)
        _check_variance(walk, var, sub, rank)
    except _NotThisForm:
        return None
    _check_closed(ctx, walk.nodes, end)
    order = {id(n): i for i, n in enumerate(ctx.graph.nodes)}
    nodes = tuple(sorted({id(n): n for n in walk.nodes}.values(), key=lambda n: order[id(n)]))
    return LayerNormChain(x, end.outputs[0], eps, length, nodes, end)


def _epsilon(walk: _Walk, name: str) -> float | None:
    """Return eps of `ve = var + eps` (Add, or a QOperator QLinearAdd between Q and DQ) and
    set the walk's `variance` to `var` (None: not this form)."""
    value = walk.value(name)
    add = walk.ctx.producers.get(value)
    if add is not None and add.domain == "" and add.op_type == "Add" and len(add.inputs) == 2:
        walk.nodes.append(add)
        for var, other in (add.inputs, add.inputs[::-1]):
            eps = walk.constant(other)
            if eps is not None:
                walk.variance = var
                return eps
        return None
    dq = walk.ctx.producer(value, "DequantizeLinear")
    qadd = walk.ctx.producers.get(dq.inputs[0]) if dq is not None else None
    if dq is None or qadd is None or qadd.domain != "com.microsoft" or qadd.op_type != "QLinearAdd":
        return None
    walk.nodes += [dq, qadd]
    for a, b in ((0, 3), (3, 0)):
        q = walk.ctx.producer(qadd.inputs[a], "QuantizeLinear")
        eps = _qlinear_constant(walk.ctx, qadd.inputs[b:b + 3])
        if q is not None and eps is not None:
            walk.nodes.append(q)
            walk.variance = q.inputs[0]
            return eps
    return None


def _qlinear_constant(ctx: FusionContext, names: tuple[str, ...]) -> float | None:
    """Return the real value of a QLinear op's constant operand (value, scale, zero point)."""
    values = [ctx.constants.get(n) for n in names if n]
    if len(values) < 2 or any(v is None or v.size != 1 for v in values):
        return None
    q, scale = values[0], values[1]
    zero = values[2] if len(values) > 2 else np.zeros(1)
    assert q is not None and scale is not None and zero is not None
    return float((np.int64(q.reshape(-1)[0]) - np.int64(zero.reshape(-1)[0]))
                 * np.float64(scale.reshape(-1)[0]))


def _mean_of(walk: _Walk, sub: Node) -> tuple[str, int, int]:
    """Return (x, rank, H) of `d = Sub(x, ReduceMean(x))`."""
    x = sub.inputs[0]
    mean = walk.step(sub.inputs[1], "ReduceMean", "GlobalAveragePool")
    if mean is None or not _same_value(walk.ctx, mean.inputs[0], x):
        raise _NotThisForm
    rank, length = _rows(walk.ctx, x)
    if not last_axis(walk.ctx, mean, rank):
        raise NotFusable(f"{LAYERNORM_NOTE}: the mean is not taken over the last axis alone "
                         "with keepdims (LAYERNORM normalizes rows of the last axis): it runs "
                         "on the host")
    return x, rank, length


def _same_value(ctx: FusionContext, a: str, b: str) -> bool:
    """True when `a` and `b` are one value, or DequantizeLinears of one value alike."""
    if a == b:
        return True
    da, db = ctx.producer(a, "DequantizeLinear"), ctx.producer(b, "DequantizeLinear")
    return da is not None and db is not None and tuple(da.inputs) == tuple(db.inputs)


def _check_variance(walk: _Walk, var: Node, sub: Node, rank: int) -> None:
    """Check `var = ReduceMean(d^2)` over the last axis, d the Sub's output."""
    square = walk.step(var.inputs[0], "Pow", "Mul")
    if square is None:
        raise _NotThisForm
    base = [walk.value(n) for n in square.inputs]
    if square.op_type == "Pow":
        if base[0] != sub.outputs[0] or walk.constant(square.inputs[1]) != 2.0:
            raise _NotThisForm
    elif base != [sub.outputs[0]] * 2:
        raise _NotThisForm
    if not last_axis(walk.ctx, var, rank):
        raise NotFusable(f"{LAYERNORM_NOTE}: the variance is not taken over the last axis "
                         "alone with keepdims: it runs on the host")


def _check_closed(ctx: FusionContext, nodes: list[Node], end: Node) -> None:
    """NotFusable unless every value the chain makes (but its result) is read only inside."""
    inside = {id(n) for n in nodes}
    for node in nodes:
        if node is end:
            continue
        for out in node.outputs:
            readers = ctx.consumers.get(out, [])
            if out in ctx.outputs or any(id(r) not in inside for r in readers):
                raise NotFusable(f"{LAYERNORM_NOTE}: {out!r} inside the layer normalization "
                                 "is read outside it: it runs on the host")
