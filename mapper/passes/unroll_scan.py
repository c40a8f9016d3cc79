"""Unroll a Scan of static length into the main graph, so its MatMuls and Convs are mapped.

Scan-9 and later (states..., scan inputs..., captures...) whose scan inputs have static shapes
and a common length L in [1, MAX_TRIPS] runs its body exactly L times, so it equals L copies of
the body in the main graph: copy t reads the states of copy t - 1 (copy 0: the initial
states), slice t of every scan input (slice L - 1 - t where its direction is 1) as
Slice + Squeeze along its axis, and the outer values through the Scan's inputs standing for
them (`Node.captures`). The final states reach the Scan's outputs through Identity nodes and
each scan output is the Concat of its L slices along its axis (in reverse order where its
direction is 1). Scan-8 (batched, sequence_lens), scan inputs of unknown shape and a negative
output axis on an output of unknown rank stay (on the host, with a note saying why).
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.passes.body_copies import Unrolled, copy_body, stack_values, unroll_each
from systolic.mapper.passes.graph_tools import Namer, make_node, tensor
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.unroll_loop import MAX_TRIPS

__all__ = ["unroll_scan"]


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How one Scan unrolls: its length and the normalized axes of its inputs and outputs."""

    length: int
    in_axes: list[int]
    in_dirs: list[int]
    out_axes: list[int]
    out_dirs: list[int]


def unroll_scan(model: Model, report: PassReport) -> Model:
    """Return `model` with every Scan of static length unrolled; `model` itself when there
    is none."""
    graph = model.graph
    if not any(_is_scan(node) for node in graph.nodes):
        return model

    def unroll(node: Node, namer: Namer, opset: int) -> Unrolled | str | None:
        plan = _plan(node, graph) if _is_scan(node) else None
        if not isinstance(plan, _Plan):
            return plan
        nodes, tensors = _unroll(node, plan, namer, opset)
        return nodes, tensors, (f"length {plan.length}: its body runs {plan.length} times in "
                                f"the main graph as '{node.label}/<step>/...'")

    return unroll_each(model, report, unroll)


def _is_scan(node: Node) -> bool:
    return node.op_type == "Scan" and node.domain == "" and isinstance(
        node.attrs.get("body"), Graph)


def _ints(node: Node, name: str, count: int) -> list[int]:
    value = node.attrs.get(name)
    return [int(v) for v in value if isinstance(v, int)] if isinstance(value, tuple) else (
        [0] * count)


def _plan(node: Node, graph: Graph) -> _Plan | str:
    """How the Scan unrolls, or why it stays on the host."""
    if node.version < 9:
        return "a Scan-8 (batched, sequence_lens) is not unrolled: runs on the host"
    body = node.attrs["body"]
    assert isinstance(body, Graph)
    scanned = node.attrs.get("num_scan_inputs")
    assert isinstance(scanned, int)
    states = len(body.inputs) - scanned
    scans = len(body.outputs) - states
    shapes = []
    for name in node.own_inputs[states:]:
        declared = graph.type_of(name)
        if declared is None or not declared.is_static or declared.shape is None:
            return "its scan inputs' shapes are known only when running: runs on the host"
        shapes.append(tuple(d for d in declared.shape if isinstance(d, int)))
    in_axes = [a % len(s) for a, s in zip(_ints(node, "scan_input_axes", scanned), shapes,
                                            strict=True)]
    lengths = {s[a] for s, a in zip(shapes, in_axes, strict=True)}
    length = lengths.pop()
    if lengths or not 1 <= length <= MAX_TRIPS:
        return f"its length is not one size in [1, {MAX_TRIPS}] (unrolled): runs on the host"
    out_axes = []
    for axis, name in zip(_ints(node, "scan_output_axes", scans), node.outputs[states:],
                          strict=False):
        declared = graph.type_of(name) if name else None
        rank = None if declared is None or declared.shape is None else len(declared.shape)
        if axis < 0 and rank is None:
            return "a negative scan output axis on an output of unknown rank: runs on the host"
        out_axes.append(axis if rank is None else axis % rank)
    return _Plan(length, in_axes, _ints(node, "scan_input_directions", scanned), out_axes,
                 _ints(node, "scan_output_directions", scans))


def _unroll(node: Node, plan: _Plan, namer: Namer, opset: int
            ) -> tuple[list[Node], list[Tensor]]:
    """Return the L copies of the body with the slicing of its scan inputs, the stacking of
    its scan outputs and the output Identity nodes, and the constants they add."""
    body = node.attrs["body"]
    assert isinstance(body, Graph)
    prefix, scanned = node.label, len(plan.in_axes)
    states = len(body.inputs) - scanned
    own = node.own_inputs
    outer = dict(zip(node.captures, node.inputs[len(own):], strict=True))
    shared = {t.name: namer(f"{prefix}/{t.name}") for t in body.initializers}
    tensors = [dataclasses.replace(t, name=shared[t.name]) for t in body.initializers]
    values = list(own[:states])
    stores: list[list[str]] = [[] for _ in plan.out_axes]
    nodes: list[Node] = []
    for step in range(plan.length):
        rename = {**outer, **shared}
        rename.update((info.name, name) for info, name in zip(body.inputs, values, strict=False))
        for j, (info, source) in enumerate(zip(body.inputs[states:], own[states:], strict=True)):
            index = plan.length - 1 - step if plan.in_dirs[j] else step
            sliced, added = _slice(source, index, plan.in_axes[j], namer, f"{prefix}/{step}",
                                   opset)
            nodes += sliced
            tensors += added
            rename[info.name] = sliced[-1].outputs[0]
        nodes += copy_body(body, rename, namer, f"{prefix}/{step}")
        outputs = [rename.get(info.name, info.name) for info in body.outputs]
        values = outputs[:states]
        for store, name in zip(stores, outputs[states:], strict=True):
            store.append(name)
    for value, target in zip(values, node.outputs[:states], strict=False):
        if target:
            nodes.append(make_node("Identity", [value], [target],
                                   name=namer(f"{prefix}/final_{target}")))
    for k, (store, target) in enumerate(zip(stores, node.outputs[states:], strict=False)):
        if target:
            ordered = store[::-1] if plan.out_dirs[k] else store
            stacked, added = stack_values(ordered, target, plan.out_axes[k], namer, prefix,
                                          opset)
            nodes += stacked
            tensors += added
    return nodes, tensors


def _slice(source: str, index: int, axis: int, namer: Namer, prefix: str, opset: int
           ) -> tuple[list[Node], list[Tensor]]:
    """Slice `index` of `source` along `axis`, that axis removed (Slice: bounds as inputs from
    opset 10; then Squeeze: axes as an input from opset 13, attributes before)."""
    bounds = [namer(f"{prefix}/{what}") for what in ("start", "end", "axis")]
    tensors = [tensor(name, np.array([value], np.int64))
               for name, value in zip(bounds, (index, index + 1, axis), strict=True)]
    cut, row = namer(f"{prefix}/{source}_cut"), namer(f"{prefix}/{source}_slice")
    if opset >= 10:
        nodes = [make_node("Slice", [source, *bounds], [cut], name=namer(f"{prefix}/slice"))]
    else:  # Slice-1: the bounds are attributes
        tensors = tensors[2:]
        nodes = [make_node("Slice", [source], [cut], name=namer(f"{prefix}/slice"),
                           attrs={"starts": (index,), "ends": (index + 1,), "axes": (axis,)})]
    inputs, attrs = ([cut, bounds[2]], {}) if opset >= 13 else ([cut], {"axes": (axis,)})
    nodes.append(make_node("Squeeze", inputs, [row], name=namer(f"{prefix}/squeeze"),
                           attrs=attrs))
    return nodes, tensors
