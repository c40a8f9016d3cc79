"""Activation tables: DequantizeLinear -> element-wise float subgraph -> QuantizeLinear
becomes one systolic.QTable (the accelerator's activation unit).

Algebra. The subgraph computes y = f(x_real) element by element from one dequantized tensor
x_real = s_x * (q - z_x), q 8-bit, and scalar constants; the QuantizeLinear then gives
clamp(rhe(y / s_y) + z_y). The whole chain is a function of q alone, which takes 256 values,
so it is exactly the table T[q + 128] (int8 domain, numeric contract "Activation tables").
T is computed by running the DequantizeLinear, the subgraph and the QuantizeLinear
themselves with the reference executor on the 256 values (`tables.table_of`): the QTable is
bit-exact with the float chain as the reference runs it. (Another runtime that evaluates f
in another order or precision may round a value that lies within a few ulps of a rounding
boundary the other way: at most one step.)

The region is found backwards from each QuantizeLinear (8-bit, per tensor): its input and,
recursively, every non-constant input of the region's nodes, must be produced by an
element-wise operator of `ELEMENTWISE` (default domain, one output) or be the output of a
DequantizeLinear of one 8-bit tensor (several DequantizeLinear nodes of the same tensor with
the same parameters count as one; a DequantizeLinear of a constant is a constant). Constants
must hold one value (a per-channel constant
makes a different function per channel: not one table). No region value may be a graph
output or be read outside the region, except the last by the QuantizeLinear; the result
must have the input's shape. This covers SiLU (x * Sigmoid(x)), GELU (Gelu, the erf chain
Div/Erf/Add/Mul/Mul, the tanh form), Mish, HardSwish, LeakyRelu ... and a bare
DequantizeLinear -> QuantizeLinear (a requantization). A region that does not qualify stays
on the host with the reason noted. The DequantizeLinear nodes are left to dead-code
elimination (they may have other readers).

Runs after `fuse_activations` (a Relu or Clip after a systolic op, same parameters, becomes
that op's bounds, cheaper than a table).
"""

import dataclasses
from collections.abc import Mapping

from systolic.ir import DataType, Model, Node
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.quant_params import EIGHT_BIT, NotFusable, per_tensor_params
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.tables import table_of

__all__ = ["ELEMENTWISE", "fuse_tables"]

ELEMENTWISE = frozenset({
    "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "PRelu", "Elu", "Selu",
    "Softplus", "Mish", "Gelu", "Exp", "Log", "Erf", "Relu", "Clip", "Sqrt", "Neg", "Abs",
    "Reciprocal", "Floor", "Ceil", "Sin", "Cos", "Mul", "Add", "Sub", "Div", "Pow", "Min",
    "Max", "Sum", "Where", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
})
"""Element-wise operators (all implemented by the reference) a table region may hold."""


class _NoPattern(Exception):
    """The QuantizeLinear does not end an element-wise region: nothing to say."""


@dataclasses.dataclass(frozen=True)
class _Region:
    source: str  # the 8-bit tensor
    dequantize: tuple[Node, ...]  # its DequantizeLinear nodes read by the region
    nodes: tuple[Node, ...]  # the float nodes, graph order


def fuse_tables(model: Model, report: PassReport) -> Model:
    """Return `model` with every DQ -> element-wise region -> Q replaced by a QTable."""
    ctx = FusionContext(model.graph)
    opsets = dict(model.opsets)
    order = {id(node): i for i, node in enumerate(model.graph.nodes)}
    for q in model.graph.nodes:
        if q.op_type != "QuantizeLinear" or q.domain != "" or ctx.is_scheduled(q):
            continue
        region = None
        try:
            region = _region(ctx, q, order)
            _fuse(ctx, q, region, opsets, report)
        except _NoPattern:
            continue
        except NotFusable as reason:
            for node in region.nodes if region is not None else _cone(ctx, q):
                if (not isinstance(reason, _OwnFusionFirst)
                        or report.note_of(node.label) is None):
                    report.note(node.label, str(reason))
    _note_unquantized(ctx, report)
    return dataclasses.replace(model, graph=ctx.result())


def _note_unquantized(ctx: FusionContext, report: PassReport) -> None:
    """Note why an element-wise node reading a dequantized tensor stays float when nothing
    said so yet: no QuantizeLinear ends its region (the model keeps its result float)."""
    for node in ctx.graph.nodes:
        if not _is_elementwise(node) or ctx.is_scheduled(node) or report.note_of(node.label):
            continue
        if any(ctx.producer(name, "DequantizeLinear") for name in node.inputs if name):
            readers = ctx.consumers.get(node.outputs[0], [])
            what = ", ".join(sorted({r.op_type for r in readers})) or "a graph output"
            report.note(node.label, f"its result is not quantized (read by {what}, not a "
                        "QuantizeLinear): the model keeps it float, on the host")


def _cone(ctx: FusionContext, q: Node) -> list[Node]:
    """Return the element-wise producer of `q`'s input (for notes when no region formed)."""
    producer = ctx.producers.get(q.inputs[0])
    return [producer] if producer is not None else []


def _is_elementwise(node: Node) -> bool:
    return (node.domain == "" and node.op_type in ELEMENTWISE
            and len([o for o in node.outputs if o]) == 1)


def _region(ctx: FusionContext, q: Node, order: Mapping[int, int]) -> _Region:
    """Return the element-wise region ending at `q`; raise _NoPattern when `q`'s input is not
    made by an element-wise node or a DequantizeLinear, NotFusable when the region fails a
    precondition."""
    first = ctx.producers.get(q.inputs[0])
    if first is None or not (_is_elementwise(first) or first.op_type == "DequantizeLinear"):
        raise _NoPattern
    if first.domain != "":
        raise _NoPattern
    nodes: dict[int, Node] = {}
    dequantize: dict[int, Node] = {}
    constant_dq: dict[int, Node] = {}
    pending = [first]
    while pending:
        node = pending.pop()
        if node.op_type == "DequantizeLinear" and node.domain == "":
            if node.inputs[0] in ctx.constants:  # a dequantized constant: a constant
                _check_scalar(ctx, node, node.inputs[0])
                constant_dq[id(node)] = node
            else:
                dequantize[id(node)] = node
            continue
        if not _is_elementwise(node):
            raise NotFusable(f"{node.op_type} {node.label!r} is not element-wise")
        if id(node) in nodes:
            continue
        nodes[id(node)] = node
        for name in node.inputs:
            if not name:
                continue
            if name in ctx.constants:
                _check_scalar(ctx, node, name)
                continue
            producer = ctx.producers.get(name)
            if producer is None:
                raise NotFusable(f"{node.op_type} {node.label!r} reads graph input {name!r}, "
                                 "not a dequantized 8-bit tensor")
            if not (_is_elementwise(producer) or producer.op_type == "DequantizeLinear"):
                raise NotFusable(f"{node.op_type} {node.label!r} reads {name!r} from "
                                 f"{producer.op_type}: not a function of one dequantized "
                                 "8-bit tensor")
            pending.append(producer)
    try:
        source = _one_source(ctx, list(dequantize.values()))
    except _TwoSources as err:
        if len(nodes) > 1:  # not a lone binary op: the region's reason is the one to give
            raise NotFusable(str(err)) from None
        raise
    region = _Region(source, tuple(sorted([*dequantize.values(), *constant_dq.values()],
                                          key=lambda n: order[id(n)])),
                     tuple(sorted(nodes.values(), key=lambda n: order[id(n)])))
    _check_readers(ctx, q, region)
    return region


def _check_scalar(ctx: FusionContext, node: Node, name: str) -> None:
    size = ctx.constants[name].size
    if size != 1:
        raise _ConstantOperand(f"{node.op_type} {node.label!r} reads constant {name!r} of "
                               f"{size} values: a per-channel constant is not one table")


class _OwnFusionFirst(NotFusable):
    """A region failure whose reason a node's own fusion (fuse_qdq's QAdd, QMul: its note)
    states better, if it gave one: the note is kept."""


class _ConstantOperand(_OwnFusionFirst):
    """The region reads a constant of more than one element (a bias, a per-channel scale):
    that node's own QAdd/QMul reason (a host input, a multiplier out of range) is the real
    one."""


class _TwoSources(_OwnFusionFirst):
    """The region reads two quantized tensors; raised as such only for a lone binary op, whose
    own fusion (QAdd, QMul) gave the better reason, if any."""


def _one_source(ctx: FusionContext, dequantize: list[Node]) -> str:
    """Return the 8-bit tensor all the region's DequantizeLinear nodes read, with the same
    per-tensor parameters; raise NotFusable otherwise."""
    if not dequantize:
        raise NotFusable("the region reads no dequantized tensor")
    first = dequantize[0]
    params = per_tensor_params(ctx.constants, first.inputs[1], _at(first, 2) or None, "input")
    for dq in dequantize[1:]:
        other = per_tensor_params(ctx.constants, dq.inputs[1], _at(dq, 2) or None, "input")
        if dq.inputs[0] != first.inputs[0] or not other.same_as(params):
            raise _TwoSources(f"the region reads two quantized tensors ({first.inputs[0]!r}, "
                             f"{dq.inputs[0]!r}) or one with two parameter sets: not one table")
    source = first.inputs[0]
    if source in ctx.constants:
        raise NotFusable(f"the region's input {source!r} is a constant")
    if ctx.dtype_of(source) not in EIGHT_BIT or params.dtype != ctx.dtype_of(source):
        raise NotFusable(f"the region's input {source!r} is not an 8-bit tensor")
    return source


def _check_readers(ctx: FusionContext, q: Node, region: _Region) -> None:
    inside = {id(node) for node in region.nodes} | {id(q)}
    for node in region.nodes:
        out = node.outputs[0]
        if out in ctx.outputs:
            raise NotFusable(f"{out!r}, inside the region, is a graph output")
        for reader in ctx.consumers.get(out, []):
            if id(reader) not in inside:
                raise NotFusable(f"{out!r}, inside the region, is also read by "
                                 f"{reader.op_type} {reader.label!r}")
    source_type = ctx.graph.type_of(region.source)
    result_type = ctx.graph.type_of(q.outputs[0])
    if source_type is None or result_type is None or source_type.shape != result_type.shape:
        raise NotFusable("the region's result does not have its input's shape (a constant "
                         "of higher rank broadcasts it)")


def _fuse(ctx: FusionContext, q: Node, region: _Region, opsets: dict[str, int],
          report: PassReport) -> None:
    out = per_tensor_params(ctx.constants, q.inputs[1], _at(q, 2) or None, "output")
    if ctx.dtype_of(q.outputs[0]) != out.dtype:
        raise NotFusable("the QuantizeLinear's output type is not its zero point's")
    src_type = ctx.dtype_of(region.source)
    assert src_type is not None
    table = table_of((*region.dequantize, *region.nodes, q), ctx.constants, region.source,
                     src_type, q.outputs[0], opsets, real=q.inputs[0])
    anchor = region.nodes[0] if region.nodes else q
    name = anchor.name or anchor.label
    table_name = ctx.constant(f"{name}_table", table)
    new = ctx.systolic_node("QTable", [region.source, table_name], q.outputs[0], name,
                            {"to": int(DataType(out.dtype))})
    ctx.replace([*region.nodes, q], new, at=q)
    report.fused([n.label for n in (*region.nodes, q)], f"systolic.QTable {new.name!r}")


def _at(node: Node, index: int) -> str:
    return node.inputs[index] if len(node.inputs) > index else ""
