"""Attention masks of -inf before a Softmax, and the IsNaN guard after it (torch's
scaled_dot_product_attention as transformers 5 exports it):

    W = Where(keep, 0, -inf)        the boolean mask made additive
    A = Add(scores, W) -> S = Softmax(A) -> O = Where(IsNaN(S), 0, S)

`finite_masks` (before quantization): each scalar -inf constant that a Where selects, when
every reader of that Where is an Add read only by Softmaxes, becomes the element type's lowest
finite number (what transformers 4 and T5 write, finfo.min). A row with at least one kept
position computes the same Softmax in float (exp of the masked distance underflows to 0 either
way, and the masked sums stay finite); the values become finite, so post-training calibration
has a range for them (cut by `softmax_ranges`). A row whose positions are all masked gives
NaN -> 0 through the guard with -inf, and a uniform row with finfo.min: after quantization
such a row is uniform in either case (an 8-bit Softmax has no NaN).

`arithmetic_masks` (before quantization, after `finite_masks`): such a mask Where(c, a, b)
of two scalar float constants becomes arithmetic on x = Cast(c, float): b (1 - x) when a is
0, a x when b is 0, else a x + b (1 - x): exact for x in {0, 1} (finite a, b). The quantizer
then takes the Cast's result as an 8-bit value and the arithmetic as one activation table,
its sum with the scores as a QAdd. Broadcast-only steps before c are dropped first when the
Adds broadcast anyway: an Expand, an And with an all-true constant (the non-causal mask's
"causal" half), as long as each Add's other input already has the Add's result shape. A
condition that the Adds broadcast in a way the vector unit does not (GPT-2's and CLIP's causal
mask [1, 1, S, S] over the scores [1, H, S, S]) is then expanded to the Adds' result shape
after the Cast (a float Expand, Concats of copies by `expand_as_concat`: integer layout once
quantized) and before the arithmetic, so the table and the sum take operands of one shape
(an Expand after the arithmetic, `expand_computed_operand`'s, would keep the arithmetic
float on the host). A
condition Not(c) is read as c with the branches swapped, and a condition And(K, c) of a
constant bool K (the causal triangle beside the padding mask) as Cast(c) * Cast(K): a product
by a constant (a QMul) instead of a boolean And on the host, exact for 0/1 values. A constant
condition (a causal buffer's, once folded) makes the Where its value: a constant the Adds
read, cut at the softmax floor when quantized. `arithmetic_masks` first splits a Where of a
bias tensor (`biased_masks`); `finite_masks` first makes a masked_fill select of the scores
additive (`additive_masks`) and a constant mask's -inf entries finite (`constant_masks`).

`quantized_isnan` (after quantization): IsNaN of a DequantizeLinear's result is false
everywhere (an integer times a finite scale is never NaN), so a Where reading it as its
condition equals its third input when that input already has the Where's shape: readers of
the Where read that input instead (the IsNaN and Where are then unread, removed later).
"""

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from systolic.ir import DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.additive_masks import additive_masks
from systolic.mapper.passes.biased_masks import split_biased_masks
from systolic.mapper.passes.constant_masks import finite_constant_masks
from systolic.mapper.passes.expand_computed_operand import broadcast_operand
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    rename_inputs,
    replace_graph,
    scalar_constant,
    splice,
    tensor,
)
from systolic.mapper.passes.report import REMOVED, PassReport

__all__ = ["MAX_GATE_ELEMENTS", "arithmetic_masks", "finite_masks", "quantized_isnan"]

MAX_GATE_ELEMENTS = 1 << 18
"""The most elements a mask's constant gate (`_constant_gate`) is stored with."""


def finite_masks(model: Model, report: PassReport) -> Model:
    """Return `model` with the -inf branch of each additive Softmax mask (module docstring)
    replaced by the lowest finite value of its type, or `model` itself when there is none.
    A select of the scores before a Softmax (masked_fill) is made additive first
    (`additive_masks`), and a constant mask's -inf entries finite (`constant_masks`)."""
    model = finite_constant_masks(additive_masks(model, report), report)
    graph = model.graph
    constants, consumers = constants_of(graph), graph.consumers()
    namer, added, nodes = Namer(graph), [], []
    for node in graph.nodes:
        if node.op_type == "Where" and node.domain == "" and _feeds_softmax_adds(node, consumers):
            mapping = {}
            for name in node.inputs[1:]:
                lowest = _finite_lowest(constants.get(name))
                if lowest is not None:
                    mapping[name] = namer(f"{name}_finite")
                    added.append(tensor(mapping[name], lowest))
            if mapping:
                node = rename_inputs(node, mapping)  # (no note: it is no reason to stay)
        nodes.append(node)
    if not added:
        return model
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def _finite_lowest(value: np.ndarray | None) -> np.ndarray | None:
    """The lowest finite value of `value`'s float type, shaped like it, when `value` is a
    one-element float constant holding -inf; else None."""
    if value is None or value.size != 1 or value.dtype.kind != "f":
        return None
    if not np.isneginf(value).all():
        return None
    return np.full(value.shape, np.finfo(value.dtype).min, value.dtype)


def _feeds_softmax_adds(node: Node, consumers: Mapping[str, list[Node]]) -> bool:
    """True when `node`'s result is read, and only by Adds whose results only Softmaxes read."""
    readers = consumers.get(node.outputs[0], [])
    if not readers or any(r.op_type != "Add" or r.domain != "" for r in readers):
        return False
    for add in readers:
        softmaxes = consumers.get(add.outputs[0], [])
        if not softmaxes or any(s.op_type != "Softmax" or s.domain != "" for s in softmaxes):
            return False
    return True


def arithmetic_masks(model: Model, report: PassReport) -> Model:
    """Return `model` with each additive Softmax mask Where(c, a, b) of scalar float
    constants a, b rewritten as arithmetic on Cast(c, float) (module docstring), or `model`
    itself when there is none. A mask Where(c, A, low) of a bias tensor A is split first
    (`biased_masks`: A added to the scores, a Where(c, 0, low) per reader)."""
    if (split := split_biased_masks(model, report)) is not model:
        from systolic.mapper.passes.pipeline import finalize  # (the pipeline imports us)

        model = finalize(split)  # the new sums' shapes, read below
    graph = model.graph
    constants, consumers, producers = constants_of(graph), graph.consumers(), graph.producers()
    namer, added = Namer(graph), []
    replaced: dict[int, list[Node]] = {}
    casts: dict[tuple[str, str], str] = {}  # (condition, float type) -> its Cast's result
    for node in graph.nodes:
        if node.op_type != "Where" or node.domain != "" or len(node.inputs) != 3:
            continue
        a, b = (scalar_constant(constants, name) for name in node.inputs[1:])
        if (a is None or b is None or a.dtype.kind != "f" or not np.isfinite([a, b]).all()
                or not _feeds_softmax_adds(node, consumers)):
            continue
        readers = consumers[node.outputs[0]]
        condition, (a, b) = _without_not(node.inputs[0], (a, b), producers)
        condition = _unbroadcast(graph, condition, producers, constants,
                                 (node.outputs[0], readers))
        if condition in constants:  # a constant mask (a causal buffer's): its value
            added.append(tensor(node.outputs[0], np.where(constants[condition], a, b)))
            replaced[id(node)] = []
            report.record(node.label, REMOVED, reason="a mask Where of constants folded into "
                          "its value (a constant operand of its Adds)")
            continue
        gate = _constant_gate(graph, condition, readers, producers, constants)
        if gate is not None:  # And(constant K, c): the arithmetic reads Cast(c) * K
            condition = gate[0]
        widened, new = _widened(graph, condition, readers, namer, casts, a.dtype,
                                force=gate is not None)
        nodes, more = _arithmetic(node, condition, (a, b), namer, casts, gate)
        nodes = widened + nodes
        new.extend(more)
        replaced[id(node)] = nodes
        added.extend(new)
        report.record(node.label, REMOVED, reason="a mask Where of two constants rewritten "
                      "as arithmetic on its condition made float (quantized as a table)")
    if not replaced:
        return model
    return dataclasses.replace(model, graph=replace_graph(
        graph, splice(graph.nodes, replaced, set()), added))


def _without_not(condition: str, branches: tuple[np.ndarray, np.ndarray],
                 producers: Mapping[str, Node]) -> tuple[str, tuple[np.ndarray, np.ndarray]]:
    """Where(Not(c), a, b) = Where(c, b, a): the condition under a Not with the branches
    swapped (DeBERTa's masks), else the condition and branches as they are."""
    node = producers.get(condition)
    if node is None or node.op_type != "Not" or node.domain != "":
        return condition, branches
    return node.inputs[0], branches[::-1]


def _unbroadcast(graph: Graph, condition: str, producers: Mapping[str, Node],
                 constants: Mapping[str, np.ndarray], adds: tuple[str, list[Node]]) -> str:
    """`condition` with its broadcast-only producers (Expand; And with an all-true constant)
    skipped while every Add in `adds` (the mask's name, its readers) still gets its result
    shape from its other input."""
    mask, readers = adds
    while (node := producers.get(condition)) is not None and node.domain == "":
        if node.op_type == "Expand":
            source = node.inputs[0]
        elif node.op_type == "And":
            others = [n for n in node.inputs if n not in constants]
            trues = [n for n in node.inputs if n in constants and bool(constants[n].all())]
            if len(others) != 1 or len(trues) != 1:
                break
            source = others[0]
        else:
            break
        if not all(_absorbs(graph, add, mask, source) for add in readers):
            break
        condition = source
    return condition


def _absorbs(graph: Graph, add: Node, mask: str, source: str) -> bool:
    """True when `add`'s input other than `mask` has `add`'s static result shape and `source`
    broadcasts to it (so reading a mask of `source`'s shape changes nothing)."""
    others = [name for name in add.inputs if name != mask]
    if len(others) != 1:
        return False
    shapes = [_static_shape(graph, name) for name in (others[0], add.outputs[0], source)]
    other, result, small = shapes
    if other is None or result is None or small is None:
        return False
    try:
        return other == result == tuple(np.broadcast_shapes(result, small))
    except ValueError:
        return False


def _static_shape(graph: Graph, name: str) -> tuple[int, ...] | None:
    """The static shape of value `name`, or None when it is not known."""
    found = graph.type_of(name)
    if found is None or found.shape is None or not found.is_static:
        return None
    return tuple(d for d in found.shape if isinstance(d, int))


def _constant_gate(graph: Graph, condition: str, adds: list[Node],
                   producers: Mapping[str, Node], constants: Mapping[str, np.ndarray],
                   ) -> tuple[str, str, np.ndarray] | None:
    """(c, K's name, K broadcast to the Adds' result shape) when `condition` is And(K, c) of
    a constant bool K (GPT-2's and CLIP's causal triangle beside the padding mask c) whose
    broadcast to the Adds' one static result shape holds at most `MAX_GATE_ELEMENTS`; else
    None. Cast(And(K, c)) = Cast(c) * Cast(K) exactly (0/1 values), so the And becomes a
    product by a constant (a QMul once quantized) instead of a boolean op on the host."""
    node = producers.get(condition)
    if node is None or node.op_type != "And" or node.domain != "" or len(node.inputs) != 2:
        return None
    fixed = [name for name in node.inputs if name in constants]
    if len(fixed) != 1 or node.inputs[0] == node.inputs[1]:
        return None
    other = node.inputs[1 - node.inputs.index(fixed[0])]
    shapes = {_static_shape(graph, add.outputs[0]) for add in adds}
    full = shapes.pop() if len(shapes) == 1 else None
    if full is None or math.prod(full) > MAX_GATE_ELEMENTS:
        return None
    small = _static_shape(graph, other)
    try:
        gate = np.broadcast_to(constants[fixed[0]], full)
        if small is None or tuple(np.broadcast_shapes(small, full)) != full:
            return None
    except ValueError:
        return None
    return other, fixed[0], gate


def _widened(graph: Graph, condition: str, adds: list[Node], namer: Namer,
             casts: dict[tuple[str, str], str], dtype: np.dtype, *, force: bool = False,
             ) -> tuple[list[Node], list[Tensor]]:
    """Cast(`condition`, `dtype`) expanded to the one static result shape of `adds` when the
    vector unit would not pair a mask of the condition's shape with the scores (neither per
    channel nor along the last axis: GPT-2's and CLIP's causal mask [1, 1, S, S] over
    [1, H, S, S]), and the shape constant the Expand reads; none when no Expand is needed.
    The arithmetic then makes a mask of the scores' shape (its table and QAdd on the
    accelerator) instead of one that `expand_computed_operand` expands after the arithmetic,
    which keeps the arithmetic float on the host; the Cast comes first so that the Expand
    is of a float value (`expand_as_concat` makes it Concats of copies, integer layout once
    quantized) rather than a bool one on the host. `force`: whenever the shapes differ (the
    condition is multiplied by a gate of the full shape). `casts` maps (condition,
    "expanded") to the Expand's result, made once, and that result (by its name and
    `dtype`) to itself: the caller reads it through `casts` and makes no second Cast."""
    shapes = {_static_shape(graph, add.outputs[0]) for add in adds}
    small = _static_shape(graph, condition)
    if len(shapes) != 1 or small is None or (full := shapes.pop()) is None:
        return [], []
    if small == full or (not force and broadcast_operand(full, small) != 1):
        return [], []
    key = (condition, "expanded")
    if key in casts:
        return [], []
    nodes = []
    x = casts.get((condition, dtype.str))
    if x is None:
        x = casts[(condition, dtype.str)] = namer(f"{condition}_as_float")
        nodes.append(make_node("Cast", [condition], [x], name=namer(f"{condition}_cast"),
                               attrs={"to": int(DataType.from_numpy(dtype))}))
    expanded = casts[key] = namer(f"{condition}_expanded")
    casts[(expanded, dtype.str)] = expanded
    shape = namer(f"{condition}_expanded_shape")
    nodes.append(make_node("Expand", [x, shape], [expanded],
                           name=namer(f"{condition}_expand")))
    return nodes, [tensor(shape, np.array(full, np.int64))]


def _arithmetic(node: Node, condition: str, branches: tuple[np.ndarray, np.ndarray],
                namer: Namer, casts: dict[tuple[str, str], str],
                gate: tuple[str, str, np.ndarray] | None = None,
                ) -> tuple[list[Node], list[Tensor]]:
    """The nodes computing Where(condition, a, b) as arithmetic on Cast(condition, float)
    (times the constant gate, `_constant_gate`) into `node`'s output, and the constants they
    read. `casts`: the Casts (and gated products) made so far, by (condition, float type),
    reused (every layer's mask reads one Cast)."""
    a, b = branches
    dtype = a.dtype
    base = node.name or node.outputs[0]
    nodes: list[Node] = []
    constants: list[Tensor] = []
    condition = casts.get((condition, "expanded"), condition)
    x = casts.get((condition, dtype.str))
    if x is None:
        x = casts[(condition, dtype.str)] = namer(f"{base}_as_float")
        nodes.append(make_node("Cast", [condition], [x], name=namer(f"{base}_cast"),
                               attrs={"to": int(DataType.from_numpy(dtype))}))
    if gate is not None:
        key = (f"{condition}*{gate[1]}", dtype.str)
        if key not in casts:
            factor = namer(f"{gate[1]}_as_float")
            constants.append(tensor(factor, gate[2].astype(dtype)))
            casts[key] = namer(f"{base}_gated")
            nodes.append(make_node("Mul", [x, factor], [casts[key]],
                                   name=namer(f"{base}_gate")))
        x = casts[key]

    def constant(value: np.ndarray | float) -> str:
        name = namer(f"{base}_c")
        constants.append(tensor(name, np.asarray(value, dtype)))
        return name

    def op(op_type: str, inputs: list[str], output: str | None = None) -> str:
        result = output or namer(f"{base}_{op_type.lower()}")
        nodes.append(make_node(op_type, inputs, [result], name=namer(f"{base}_{op_type}")))
        return result

    out = node.outputs[0]
    if float(a) == 0.0:
        op("Mul", [op("Sub", [constant(1.0), x]), constant(b)], out)
    elif float(b) == 0.0:
        op("Mul", [x, constant(a)], out)
    else:
        kept = op("Mul", [x, constant(a)])
        op("Add", [kept, op("Mul", [op("Sub", [constant(1.0), x]), constant(b)])], out)
    return nodes, constants


def quantized_isnan(model: Model, report: PassReport) -> Model:
    """Return `model` with each Where(IsNaN(DequantizeLinear(...)), a, b) bypassed (its readers
    read b) when b has the Where's static shape, or `model` itself when none is."""
    graph = model.graph
    producers = graph.producers()
    outputs = {info.name for info in graph.outputs}
    alias: dict[str, str] = {}
    for node in graph.nodes:
        if node.op_type != "Where" or node.domain != "" or node.outputs[0] in outputs:
            continue
        guard = producers.get(node.inputs[0])
        if guard is None or guard.op_type != "IsNaN" or guard.domain != "":
            continue
        source = producers.get(guard.inputs[0])
        if source is None or source.op_type != "DequantizeLinear":
            continue
        if _same_static_shape(graph, node.inputs[2], node.outputs[0]):
            alias[node.outputs[0]] = node.inputs[2]
            for label in (guard.label, node.label):
                report.record(label, REMOVED, reason="a dequantized value is never NaN")
    if not alias:
        return model
    nodes = [rename_inputs(node, alias) for node in graph.nodes]
    return dataclasses.replace(model, graph=dataclasses.replace(graph, nodes=tuple(nodes)))


def _same_static_shape(graph: Graph, a: str, b: str) -> bool:
    """True when values `a` and `b` have known, equal, static shapes and the same type."""
    found = [graph.type_of(name) for name in (a, b)]
    if any(t is None or t.shape is None or not t.is_static for t in found):
        return False
    first, second = found
    assert first is not None and second is not None
    return first.shape == second.shape and first.dtype == second.dtype
