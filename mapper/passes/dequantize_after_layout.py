"""Move a DequantizeLinear after the element-selecting layout ops it feeds, so that they
select integers: Split, Slice, nearest Resize (and Upsample), Gather of computed indices and
GatherElements (DeBERTa's relative positions; it then runs on the host, on the integers).

Each output element of these ops is one element of the data input, so for per-tensor
parameters p

    op(DQ_p(u)) = DQ_p(op(u))

exactly (the other inputs, split sizes, bounds, scales, sizes or indices, are unchanged). A node
qualifies when its data input is read through a DequantizeLinear of 8-bit `u` with constant
per-tensor parameters p, each of its outputs is no graph output and is read, and some output is
read by a QuantizeLinear (default domain, constant per-tensor parameters) or by an element-wise
op of one computed input whose result a QuantizeLinear reads (a QOperator export's rotate_half:
DQ -> Slice -> Neg -> Q, then Slice on the integers and DQ -> Neg -> Q, a table), or by a tree of
Slice, Split and moving layout ops (Reshape, Transpose, Squeeze, Unsqueeze, Flatten) that
leads to such a reader (a QOperator export's fused qkv projection: DQ -> Slice -> Reshape ->
Transpose -> Slice -> {Q, Slice -> Q, Slice -> Neg -> Q}). A moving layout op qualifies
likewise when it leads, through moving ops, to a Slice or Split that does: each output
element is one input element, op(DQ_p(u)) = DQ_p(op(u)) too. Each rewrite leaves its other
readers a DequantizeLinear, so the pipeline runs this pass until nothing changes: the tree is
taken one level per run. The op then reads
`u`; for each output, one reader of p's own parameters is dropped (the op writes its integers
under that reader's output name: Q_p(DQ_p(v)) = v), and every other reader, a Q_k or a float
op (a QOperator export's float ReduceMean beside the Q of the same Slice: GhostNet's
squeeze-excitation), reads DQ_p(op(u)) instead (for a Q_k a requantization that `fuse_tables`
makes a QTable; a float op then reads a DequantizeLinear the later fusions may take).
An enlarging Resize read by one Q_k of other parameters alone requantizes first instead:
op(Q_k(DQ_p(u))), the table
on the input's elements rather than the output's. A Resize qualifies only in mode "nearest"
without tf_crop_and_resize (whose extrapolated elements are no input element); a Gather of
constant indices is `fuse_gather`'s.

Every 8-bit Split, Slice, Resize and Upsample of the default domain, rewritten here or
already on integers (a QOperator export), is recorded "layout": the lowering runs it
(`lowering/layout.py`).
"""

import dataclasses
import math

from systolic.ir import Model, Node
from systolic.mapper.passes.fuse_tables import ELEMENTWISE
from systolic.mapper.passes.fusion_context import FusionContext
from systolic.mapper.passes.graph_tools import attr_str, make_node
from systolic.mapper.passes.quant_params import (
    EIGHT_BIT,
    NotFusable,
    QuantParams,
    per_tensor_params,
)
from systolic.mapper.passes.report import LAYOUT, REMOVED, PassReport

__all__ = ["COMPUTED_INDICES", "MOVING_LAYOUT_OPS", "PER_ELEMENT_INDICES",
           "SELECTING_LAYOUT_OPS", "dequantize_after_layout"]

SELECTING_LAYOUT_OPS = frozenset({"Split", "Slice", "Resize", "Upsample", "Gather",
                                  "GatherElements"})
"""The layout ops this pass moves a DequantizeLinear through."""

PER_ELEMENT_INDICES = (
    "it selects each element by an index tensor (GatherElements): no LOAD address pattern "
    "reads one, so the host selects the 8-bit elements"
)
"""Why a GatherElements of 8-bit elements runs on the host (the passes' note)."""

_HOST_SELECTING = frozenset({"Gather", "GatherElements"})

MOVING_LAYOUT_OPS = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"})
"""Layout ops this pass moves a DequantizeLinear through on the way to a Slice or Split
that selects integers for a quantized reader (`_leads_to_selection`)."""

_SLICING = frozenset({"Slice", "Split"})

_MAX_DEPTH = 16
"""The most layout ops followed from a value to the reader it leads to."""

_LAYOUT_REASON = "runs on integers (addressing or COPY)"

COMPUTED_INDICES = (
    "its indices are computed at run time: a LOAD's external address is a constant field of "
    "its instruction word and the ISA has no indexed LOAD (row addresses read from a tensor in "
    "memory), so the host selects the rows (of the 8-bit table when it is quantized)"
)
"""Why a Gather of computed indices runs on the host (the passes' note and the lowering's)."""


def dequantize_after_layout(model: Model, report: PassReport) -> Model:
    """Return `model` with each qualifying layout op reading the integers under its
    DequantizeLinear (see the module docstring); `model` itself when nothing changes."""
    ctx = FusionContext(model.graph)
    changed = False
    for node in model.graph.nodes:
        if node.domain == "" and node.op_type in MOVING_LAYOUT_OPS:
            changed |= _move_through(ctx, node, report)
            continue
        if node.domain != "" or node.op_type not in SELECTING_LAYOUT_OPS:
            continue
        computed = node.op_type == "Gather" and node.inputs[1] not in ctx.constants
        if node.op_type == "Gather" and not computed:
            continue  # a Gather of constant indices is fuse_gather's
        try:
            dequantize, params = _dequantized_input(ctx, node)
            readers = _quantize_readers(ctx, node)
        except NotFusable as reason:
            if computed or ctx.dtype_of(node.inputs[0]) not in EIGHT_BIT:
                # a node on integers already (moved by an earlier run) needs no reason
                report.note(node.label, COMPUTED_INDICES if computed else str(reason))
            _record_integer(ctx, node, report)
            continue
        if not _requantize_first(ctx, node, params, readers, report):
            _rewrite(ctx, node, dequantize, params, readers, report)
        changed = True
    return dataclasses.replace(model, graph=ctx.result()) if changed else model


def _move_through(ctx: FusionContext, node: Node, report: PassReport) -> bool:
    """Rewrite moving layout op `node` on the integers under its DequantizeLinear when some
    output leads to a Slice or Split that qualifies (`_leads_to_selection`); return whether
    it did. Nothing is noted otherwise (the op is no selecting op)."""
    if not any(name and _leads_to_selection(ctx, name) for name in node.outputs):
        return False
    try:
        dequantize, params = _dequantized_input(ctx, node)
        readers = _quantize_readers(ctx, node)
    except NotFusable:
        return False
    _rewrite(ctx, node, dequantize, params, readers, report)
    return True


def _leads_to_quantize(ctx: FusionContext, name: str, depth: int = 0) -> bool:
    """True when a QuantizeLinear or a `_tabled` op reads value `name`, or a Slice, Split or
    moving layout op reads it as its data input and some output of it leads to one."""
    for reader in ctx.consumers.get(name, []):
        if reader.domain != "":
            continue
        if reader.op_type == "QuantizeLinear" or _tabled(ctx, reader):
            return True
        if (depth < _MAX_DEPTH and reader.op_type in _SLICING | MOVING_LAYOUT_OPS
                and reader.inputs[0] == name
                and any(out and _leads_to_quantize(ctx, out, depth + 1)
                        for out in reader.outputs)):
            return True
    return False


def _leads_to_selection(ctx: FusionContext, name: str, depth: int = 0) -> bool:
    """True when a Slice or Split reads value `name` as its data input and some output of it
    leads to a quantized reader (`_leads_to_quantize`), directly or through moving layout
    ops."""
    for reader in ctx.consumers.get(name, []):
        if reader.domain != "" or not reader.inputs or reader.inputs[0] != name:
            continue
        outputs = [out for out in reader.outputs if out]
        if reader.op_type in _SLICING and any(_leads_to_quantize(ctx, out) for out in outputs):
            return True
        if (depth < _MAX_DEPTH and reader.op_type in MOVING_LAYOUT_OPS
                and any(_leads_to_selection(ctx, out, depth + 1) for out in outputs)):
            return True
    return False


def _record_integer(ctx: FusionContext, node: Node, report: PassReport) -> None:
    """Record an 8-bit Split, Slice, Resize or Upsample left as it is (on integers already)
    as layout."""
    if node.op_type not in _HOST_SELECTING and ctx.dtype_of(node.inputs[0]) in EIGHT_BIT:
        report.record(node.label, LAYOUT, reason=_LAYOUT_REASON)


def _dequantized_input(ctx: FusionContext, node: Node) -> tuple[Node, QuantParams]:
    """Return the DequantizeLinear the node's data input comes from and its parameters."""
    if node.op_type in ("Resize", "Upsample"):
        if attr_str(node, "mode", "nearest") != "nearest":
            raise NotFusable("only a nearest Resize selects input elements")
        if attr_str(node, "coordinate_transformation_mode", "") == "tf_crop_and_resize":
            raise NotFusable("tf_crop_and_resize writes extrapolated values")
    dequantize = ctx.producer(node.inputs[0], "DequantizeLinear")
    if dequantize is None:
        raise NotFusable("the data input is not read through a DequantizeLinear")
    return dequantize, _params(ctx, dequantize, "input")


def _quantize_readers(ctx: FusionContext, node: Node) -> list[list[tuple[Node, QuantParams]]]:
    """Return, per output, its QuantizeLinear readers and their parameters (its other
    readers then read a DequantizeLinear: `_float_readers`). NotFusable when an output is a
    graph output, omitted or unread, or when no output is read by a QuantizeLinear."""
    found = []
    for name in node.outputs:
        if not name or name in ctx.outputs or not ctx.consumers.get(name):
            raise NotFusable("an output is a graph output, omitted or unread")
        found.append([(r, _params(ctx, r, "output")) for r in ctx.consumers[name]
                      if r.op_type == "QuantizeLinear" and r.domain == ""])
    if not any(found) and not any(_leads_to_quantize(ctx, name) for name in node.outputs):
        raise NotFusable("no output is read by a QuantizeLinear, nor by a one-input "
                         "element-wise op that a QuantizeLinear reads, nor leads to one "
                         "through layout ops")
    return found


def _tabled(ctx: FusionContext, reader: Node) -> bool:
    """True for a default-domain element-wise op whose other inputs are constants and whose
    result a QuantizeLinear reads: DQ -> op -> Q, a table once fused (a QOperator export's
    rotate_half, Neg of a Slice)."""
    if reader.domain != "" or reader.op_type not in ELEMENTWISE or len(reader.outputs) != 1:
        return False
    if sum(name not in ctx.constants for name in reader.inputs if name) != 1:
        return False
    return any(r.op_type == "QuantizeLinear" and r.domain == ""
               for r in ctx.consumers.get(reader.outputs[0], []))


def _float_readers(ctx: FusionContext, name: str) -> bool:
    """True when a node other than a QuantizeLinear reads `name`."""
    return any(r.op_type != "QuantizeLinear" or r.domain != ""
               for r in ctx.consumers.get(name, []))


def _params(ctx: FusionContext, node: Node, what: str) -> QuantParams:
    zero = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    return per_tensor_params(ctx.constants, node.inputs[1], zero, what)


def _requantize_first(ctx: FusionContext, node: Node, params: QuantParams,
                      readers: list[list[tuple[Node, QuantParams]]], report: PassReport) -> bool:  # fmt: skip
    """For an enlarging Resize/Upsample whose output is requantized to other parameters by
    one QuantizeLinear (directly, or after a Q -> DQ pair of its own parameters: a QDQ
    export's Resize -> Q -> DQ -> Concat's Q), schedule that requantization before it and the
    op on the requantized integers under the last Q's output name (nearest resampling
    commutes with any element-wise function): the table then runs on the input's elements,
    not on the f-times-larger output. Return whether it did."""
    if (node.op_type not in ("Resize", "Upsample") or len(readers[0]) != 1
            or _float_readers(ctx, node.outputs[0])):
        return False
    before, after = ctx.shape_of(node.inputs[0]), ctx.shape_of(node.outputs[0])
    if before is None or after is None or math.prod(after) <= math.prod(before):
        return False
    chain = _requantizing_chain(ctx, readers[0][0], params)
    if chain is None:
        return False
    quantize = chain[-1]
    requantized = ctx.namer(f"{node.inputs[0]}_requantized")
    first = make_node("QuantizeLinear", (node.inputs[0], *quantize.inputs[1:]), (requantized,),
                      name=ctx.namer(f"{quantize.label}_before_{node.label}"))
    ctx.replace((node, *chain), first, at=node)
    ctx.replace((), dataclasses.replace(node, inputs=(requantized, *node.inputs[1:]),
                                        outputs=quantize.outputs[:1]), at=node)  # fmt: skip
    for moved in chain:
        report.record(moved.label, REMOVED, reason=f"the requantization moved before "
                      f"{node.label!r}, onto its input's elements")
    report.record(node.label, LAYOUT, reason=_LAYOUT_REASON)
    return True


def _requantizing_chain(ctx: FusionContext, reader: tuple[Node, QuantParams],
                        params: QuantParams) -> list[Node] | None:  # fmt: skip
    """Return [Q] when the reader Q has other parameters than `params`, [Q_p, DQ_p, Q] when
    it has the same ones and its integers go on only through a DQ of them to one Q of other
    parameters; else None."""
    quantize, theirs = reader
    if not theirs.same_as(params):
        return [quantize]
    try:
        dequantize = ctx.sole_reader(quantize.outputs[0])
        if dequantize.op_type != "DequantizeLinear" or dequantize.domain != "":
            return None
        if not _params(ctx, dequantize, "input").same_as(params):
            return None
        last = ctx.sole_reader(dequantize.outputs[0])
        if last.op_type != "QuantizeLinear" or last.domain != "":
            return None
        if _params(ctx, last, "output").same_as(params):
            return None
    except NotFusable:
        return None
    return [quantize, dequantize, last]


def _rewrite(ctx: FusionContext, node: Node, dequantize: Node, params: QuantParams,
             readers: list[list[tuple[Node, QuantParams]]], report: PassReport) -> None:  # fmt: skip
    """Schedule the op on the integers and the readers' DequantizeLinear nodes."""
    outputs: list[str] = []
    added: list[Node] = []
    removed: list[Node] = [node]
    for name, quantizers in zip(node.outputs, readers, strict=True):
        same = next((q for q, p in quantizers if p.same_as(params)), None)
        integer = same.outputs[0] if same is not None else ctx.namer(f"{name}_quantized")
        outputs.append(integer)
        if same is not None:
            removed.append(same)
            report.record(same.label, REMOVED, reason=f"{node.label!r} now selects integers "
                          "of the same parameters")
        if _float_readers(ctx, name) or any(q is not same for q, _ in quantizers):
            # the float value for the other readers
            added.append(make_node("DequantizeLinear", (integer, *dequantize.inputs[1:]),
                                   (name,), name=ctx.namer(f"{name}_DequantizeLinear")))
    data = (dequantize.inputs[0], *node.inputs[1:])
    ctx.replace(removed, dataclasses.replace(node, inputs=data, outputs=tuple(outputs)),
                at=node)
    for extra in added:
        ctx.replace((), extra, at=node)
    if node.op_type == "Gather":
        report.note(node.label, COMPUTED_INDICES)
    elif node.op_type == "GatherElements":
        report.note(node.label, PER_ELEMENT_INDICES)
    else:
        report.record(node.label, LAYOUT, reason=_LAYOUT_REASON)
