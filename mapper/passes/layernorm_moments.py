"""The moments form of a float layer normalization (Flax's LayerNorm through jax2tf, magika)
rewritten as the decomposed form `layernorm_match` knows, before quantization.

The moments form computes the variance as E[x^2] - E[x]^2 and folds gamma into the inverse
deviation:

    mean = ReduceSum(x, axes) * (1/H)        (or ReduceMean(x, axes)), keepdims 0 or 1
    var  = Max(0, ReduceSum(x*x, axes) * (1/H) - mean*mean)        (the Max optional)
    r    = Reciprocal(Sqrt(broadcast(var) + eps)) [* gamma]
    y    = (x - broadcast(mean)) * r [+ beta]

`broadcast` is any chain of Reshape, Expand and Unsqueeze (keepdims 0 made broadcastable
again). Exactly, var is the variance (E[(x - mean)^2] = E[x^2] - mean^2; the Max guards
float rounding only), so the rewrite

    mean' = ReduceMean(x, [axis]), d = x - mean', var' = ReduceMean(d*d, [axis]),
    n = d / Sqrt(var' + eps), y = n * gamma [+ beta]

computes the same function (the float rounding differs). It is done over one axis, with
gamma and beta constants of one value per element of it (made [H] vectors): the last axis
directly (what LAYERNORM normalizes), another one (magika's first LayerNorm: the 512
channels of [N, 512, 256]) moved last by a Transpose before and back by one after beta (the
layout ops run on the integers). A moments form over several axes stays as it is, its nodes
noted with the reason. The new nodes keep the names of the nodes they replace where one
replaces one (ReduceSum -> ReduceMean, the Sub, the Sqrt, Reciprocal -> Div, the gamma Mul,
the beta Add); the others are recorded fused into the Div.
"""

import dataclasses
import math

import numpy as np

from systolic.ir import Model, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_ints, make_node
from systolic.mapper.passes.layernorm_match import LAYERNORM_NOTE
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["moments_layernorm"]

_BROADCAST = ("Reshape", "Expand", "Unsqueeze")


@dataclasses.dataclass
class _Moments:
    x: str
    axes: tuple[int, ...]
    eps: float
    gamma: str  # "" when there is none
    beta: str  # "" when there is none
    end: Node  # the Mul by r, or the beta Add
    named: dict[str, Node]  # role -> the original node the new one is named after
    nodes: list[Node]  # every original node of the form


def moments_layernorm(model: Model, report: PassReport,
                      refused: dict[str, str] | None = None) -> Model:  # fmt: skip
    """Return `model` with every moments-form layer normalization over one axis rewritten as
    the decomposed form over the last axis (module docstring); `refused` collects the reason
    (by node label) for one that is not."""
    if not any(n.op_type == "ReduceSum" for n in model.graph.nodes):
        return model
    ctx = FusionContext(model.graph)
    opset = dict(model.opsets).get("", 1)
    for node in model.graph.nodes:
        if ctx.is_scheduled(node) or node.op_type != "Mul" or node.domain != "":
            continue
        found = _match(ctx, node)
        if found is None:
            continue
        shape = ctx.shape_of(found.x) or ()
        axes = sorted({a % len(shape) for a in found.axes}) if shape else []
        if len(axes) != 1 or not _vectors_fit(ctx, found, shape, axes[0]):
            why = (f"{LAYERNORM_NOTE}: a layer normalization (moments form) over axes "
                   f"{axes} of a rank-{len(shape)} tensor, not one axis with gamma and beta "
                   "along it (LAYERNORM normalizes rows of one axis): it runs on the host")
            for member in found.nodes:
                report.note(member.label, why)
                if refused is not None:
                    refused[member.label] = why
            continue
        _rewrite(ctx, found, (axes[0], len(shape), opset), report)
    return dataclasses.replace(model, graph=ctx.result())


def _vectors_fit(ctx: FusionContext, found: _Moments, shape: tuple[int, ...],
                 axis: int) -> bool:  # fmt: skip
    """True when gamma and beta (when there) hold one value per element of `axis` and no
    more axes than x (they become [H] vectors along the normalized axis)."""
    for name in (found.gamma, found.beta):
        value = ctx.constants.get(name) if name else None
        if value is not None and (value.size != shape[axis] or value.ndim > len(shape)
                                  or (value.ndim == len(shape) and value.shape[axis] != shape[axis])):
            return False
    return True


def _producer(ctx: FusionContext, name: str, *op_types: str) -> Node | None:
    node = ctx.producers.get(name)
    if node is None or node.domain != "" or node.op_type not in op_types:
        return None
    return node


def _split_constant(ctx: FusionContext, node: Node) -> tuple[str, str] | None:
    """Return (computed input, constant input) of a two-input node with one constant."""
    if len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if b in ctx.constants and a not in ctx.constants:
        return a, b
    if a in ctx.constants and b not in ctx.constants:
        return b, a
    return None


def _unbroadcast(ctx: FusionContext, name: str, seen: list[Node]) -> str:
    """Return `name` with Reshape/Expand/Unsqueeze before it skipped (they join `seen`)."""
    while (node := _producer(ctx, name, *_BROADCAST)) is not None:
        seen.append(node)
        name = node.inputs[0]
    return name


def _axes(ctx: FusionContext, node: Node) -> tuple[int, ...] | None:
    axes = attr_ints(node, "axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = ctx.constants.get(node.inputs[1])
        axes = None if value is None else tuple(int(a) for a in value.reshape(-1))
    return axes


_Mean = tuple[str, tuple[int, ...], Node]
"""(source, axes, the ReduceSum or ReduceMean) of a mean."""


def _mean(ctx: FusionContext, name: str, seen: list[Node]) -> _Mean | None:
    """Return the mean `name` = ReduceMean(source) or ReduceSum(source) * (1/H)."""
    node = _producer(ctx, name, "ReduceMean", "Mul")
    if node is not None and node.op_type == "Mul":
        parts = _split_constant(ctx, node)
        total = _producer(ctx, parts[0], "ReduceSum") if parts else None
        if parts is None or total is None:
            return None
        axes, shape = _axes(ctx, total), ctx.shape_of(total.inputs[0])
        if axes is None or shape is None:
            return None
        count = math.prod(shape[a] for a in axes)
        factor = ctx.constants[parts[1]]
        if factor.size != 1 or not np.isclose(float(factor.reshape(-1)[0]) * count, 1.0,
                                               rtol=1e-6):  # fmt: skip
            return None
        seen += [node, total]
        return total.inputs[0], axes, total
    if node is None:
        return None
    axes = _axes(ctx, node)
    if axes is None:
        return None
    seen.append(node)
    return node.inputs[0], axes, node


def _match(ctx: FusionContext, end: Node) -> _Moments | None:
    """Return the moments form whose `(x - mean) * r` is `end`, else None."""
    for d_name, r_name in (end.inputs, end.inputs[::-1]):
        found = _match_order(ctx, end, d_name, r_name)
        if found is not None:
            return found
    return None


def _match_order(ctx: FusionContext, end: Node, d_name: str, r_name: str) -> _Moments | None:
    seen: list[Node] = [end]
    sub = _producer(ctx, d_name, "Sub")
    if sub is None:
        return None
    seen.append(sub)
    x, gamma, named = sub.inputs[0], "", {"sub": sub}
    scale = _producer(ctx, r_name, "Mul")
    if scale is not None and (parts := _split_constant(ctx, scale)) is not None:
        r_name, gamma = parts
        seen.append(scale)
        named["gamma"] = scale
    recip = _producer(ctx, r_name, "Reciprocal")
    sqrt = _producer(ctx, recip.inputs[0], "Sqrt") if recip is not None else None
    add = _producer(ctx, sqrt.inputs[0], "Add") if sqrt is not None else None
    parts = _split_constant(ctx, add) if add is not None else None
    if recip is None or sqrt is None or add is None or parts is None:
        return None
    seen += [recip, sqrt, add]
    named |= {"div": recip, "sqrt": sqrt, "add": add}
    eps = ctx.constants[parts[1]]
    variance = _variance(ctx, _unbroadcast(ctx, parts[0], seen), seen)
    if variance is None or eps.size != 1:
        return None
    (source, axes, reduction), mean = variance
    if source != x or _unbroadcast(ctx, sub.inputs[1], seen) != mean[0]:
        return None
    named |= {"mean": mean[1], "var": reduction}
    found = _Moments(x, axes, float(eps.reshape(-1)[0]), gamma, "", end, named, seen)
    _beta(ctx, found)
    return found if _closed(ctx, found) else None


def _variance(ctx: FusionContext, name: str,
              seen: list[Node]) -> tuple[_Mean, tuple[str, Node]] | None:  # fmt: skip
    """Return (E[x^2] as (x, axes, its reduction), (the mean's value, its reduction)) of
    `[Max(0,] E[x^2] - mean*mean [)]`."""
    node = _producer(ctx, name, "Max")
    if node is not None:
        parts = _split_constant(ctx, node)
        if parts is None or np.any(ctx.constants[parts[1]] != 0):
            return None
        seen.append(node)
        name = parts[0]
    sub = _producer(ctx, name, "Sub")
    square_mean = _producer(ctx, sub.inputs[1], "Mul") if sub is not None else None
    if sub is None or square_mean is None or len(set(square_mean.inputs)) != 1:
        return None
    seen += [sub, square_mean]
    moment = _mean(ctx, sub.inputs[0], seen)
    square = _producer(ctx, moment[0], "Mul") if moment is not None else None
    if moment is None or square is None or len(set(square.inputs)) != 1:
        return None
    seen.append(square)
    mean = _mean(ctx, square_mean.inputs[0], seen)
    if mean is None or mean[:2] != (square.inputs[0], moment[1]):
        return None
    return (mean[0], moment[1], moment[2]), (square_mean.inputs[0], mean[2])


def _beta(ctx: FusionContext, found: _Moments) -> None:
    """Take the Add of a constant that is the only reader of the product, when there."""
    readers = ctx.consumers.get(found.end.outputs[0], [])
    add = readers[0] if len(readers) == 1 else None
    if add is None or add.op_type != "Add" or found.end.outputs[0] in ctx.outputs:
        return
    parts = _split_constant(ctx, add)
    if parts is not None and parts[0] == found.end.outputs[0]:
        found.beta, found.end = parts[1], add
        found.named["beta"] = add
        found.nodes.append(add)


def _closed(ctx: FusionContext, found: _Moments) -> bool:
    """True when every value of the form but its result is read only inside it."""
    inside = {id(n) for n in found.nodes}
    for node in found.nodes:
        if node is found.end:
            continue
        for out in node.outputs:
            if out in ctx.outputs or any(id(r) not in inside for r in ctx.consumers.get(out, [])):
                return False
    return True


def _rewrite(ctx: FusionContext, found: _Moments, where: tuple[int, int, int],
             report: PassReport) -> None:
    """Replace the form by the decomposed one over `axis` (`where`: axis, rank, opset); an
    axis before the last is moved last by a Transpose first and back by one after beta."""
    axis, rank, opset = where
    names = {role: node.name or node.label for role, node in found.named.items()}
    value = ctx.namer
    base = names["div"]
    perm = [a for a in range(rank) if a != axis] + [axis]
    moved = perm != list(range(rank))
    x, out = found.x, found.end.outputs[0]
    nodes = []
    if moved:
        x, out = value(f"{base}_moved"), value(f"{base}_result_moved")
        nodes.append(make_node("Transpose", (found.x,), (x,), name=value(f"{base}_to_last"),
                               attrs={"perm": tuple(perm)}))
    nodes += _decomposed(ctx, found, names, (x, out, opset))
    if moved:
        back = tuple(int(a) for a in np.argsort(perm))
        nodes.append(make_node("Transpose", (out,), (found.end.outputs[0],),
                               name=value(f"{base}_from_last"), attrs={"perm": back}))
    kept = {id(found.named[role]) for role in names}
    for node in found.nodes:
        if id(node) not in kept:
            report.record(node.label, FUSED, into=f"layer normalization {names['div']!r} "
                          "(moments form rewritten as its decomposed form)")
    for new in nodes:
        ctx.replace(found.nodes, new, at=found.end)


def _decomposed(ctx: FusionContext, found: _Moments, names: dict[str, str],
                io: tuple[str, str, int]) -> list[Node]:  # fmt: skip
    """The decomposed nodes over the last axis of `x` into `out` (`io`: x, out, opset), gamma
    and beta as [H] vectors."""
    x, out, opset = io
    value, base = ctx.namer, names["div"]
    mean, d, sq, var, ve, sd = (value(f"{base}_{s}") for s in
                                ("mean", "deviation", "square", "variance", "plus_eps", "root"))
    eps = ctx.constant(f"{base}_eps", np.array(found.eps, np.float32))
    n = value(f"{base}_normalized") if found.gamma or found.beta else out
    nodes = [_reduce_mean(ctx, x, mean, names["mean"], (-1,), opset),
             make_node("Sub", (x, mean), (d,), name=names["sub"]),
             make_node("Mul", (d, d), (sq,), name=value(f"{base}_square")),
             _reduce_mean(ctx, sq, var, names["var"], (-1,), opset),
             make_node("Add", (var, eps), (ve,), name=names["add"]),
             make_node("Sqrt", (ve,), (sd,), name=names["sqrt"]),
             make_node("Div", (d, sd), (n,), name=base)]
    last = n
    if found.gamma:
        gamma = ctx.constant(f"{base}_gamma", ctx.constants[found.gamma].reshape(-1))
        last = out if not found.beta else value(f"{base}_scaled")
        nodes.append(make_node("Mul", (n, gamma), (last,), name=names["gamma"]))
    if found.beta:
        beta = ctx.constant(f"{base}_beta", ctx.constants[found.beta].reshape(-1))
        nodes.append(make_node("Add", (last, beta), (out,), name=names["beta"]))
    return nodes


def _reduce_mean(ctx: FusionContext, x: str, out: str, name: str, axes: tuple[int, ...],
                 opset: int) -> Node:
    if opset >= 18:
        axes_name = ctx.constant(f"{name}_axes", np.array(axes, np.int64))
        return make_node("ReduceMean", (x, axes_name), (out,), name=name, attrs={"keepdims": 1})
    return make_node("ReduceMean", (x,), (out,), name=name, attrs={"axes": axes, "keepdims": 1})

