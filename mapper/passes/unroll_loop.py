"""Unroll a Loop of known trip count into the main graph, so its MatMuls and Convs are mapped.

Loop(M, cond, v_initial..., captures...) with M a one-element constant in [1, MAX_TRIPS] and
cond absent or a constant true that the body passes on unchanged (its condition output is its
condition input, directly or through Identity nodes, or a constant true) runs the body exactly
M times, so it equals M copies of the body in the main graph: copy t reads the iteration
number t and the condition true as constants, the carried values of copy t - 1 (copy 0: the
initial values) and the outer values through the Loop's inputs standing for them
(`Node.captures`, by position). Node outputs get fresh names "<loop>/<t>/<name>"; the body's
initializers are added once ("<loop>/<name>"), shared by every copy. The final carried values
reach the Loop's outputs through Identity nodes (remove_identities drops them) and each scan
output is the Concat of its M values, each given a leading axis of 1 (Unsqueeze). Other Loops
stay (on the host, with a note saying why).
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.loop_control import TypeOf, controlled_trips
from systolic.mapper.passes.body_copies import Unrolled, copy_body, stack_values, unroll_each
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    scalar_constant,
    tensor,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["MAX_TRIPS", "unroll_loop"]

MAX_TRIPS = 64
"""The most iterations unrolled (each copies the body into the main graph)."""


def unroll_loop(model: Model, report: PassReport) -> Model:
    """Return `model` with every Loop of known trip count unrolled; `model` itself when
    there is none."""
    graph = model.graph
    if not any(_is_loop(node) for node in graph.nodes):
        return model
    constants = constants_of(graph)

    def unroll(node: Node, namer: Namer, opset: int) -> Unrolled | str | None:
        trips = _trip_count(node, constants, graph.type_of) if _is_loop(node) else None
        if not isinstance(trips, int):
            return trips
        nodes, tensors = _unroll(node, trips, namer, opset)
        return nodes, tensors, (f"trip count {trips}: its body runs {trips} times in the main "
                                f"graph as '{node.label}/<iteration>/...'")

    return unroll_each(model, report, unroll)


def _is_loop(node: Node) -> bool:
    return node.op_type == "Loop" and node.domain == "" and isinstance(
        node.attrs.get("body"), Graph)


def _trip_count(node: Node, constants: dict[str, np.ndarray], type_of: TypeOf) -> int | str:
    """The iteration count when the Loop can be unrolled, else why it stays on the host."""
    body = node.attrs["body"]
    assert isinstance(body, Graph)
    given = node.inputs[0] if node.inputs else ""
    trip = scalar_constant(constants, given)
    if given and trip is None:
        return "its trip count M is not a constant: runs on the host"
    cond = node.inputs[1] if len(node.inputs) > 1 else ""
    if cond and scalar_constant(constants, cond) is None:
        return "its condition is known only when running: runs on the host"
    if cond and not (trip is not None and bool(scalar_constant(constants, cond))
                     and _passes_true(node, body, constants)):
        found = controlled_trips(node, constants, type_of, None if trip is None
                                 else int(trip), MAX_TRIPS)
        if found is None:
            return ("its condition may stop it before the trip count (known only when "
                    f"running, or after more than {MAX_TRIPS} iterations): runs on the host")
        trip = np.array(found)
    if trip is None:
        return "it has neither a trip count nor a condition: runs on the host"
    count = int(trip)
    if not 1 <= count <= MAX_TRIPS:
        return f"its trip count {count} is not in [1, {MAX_TRIPS}] (unrolled): runs on the host"
    return count


def _passes_true(node: Node, body: Graph, constants: dict[str, np.ndarray]) -> bool:
    """Whether the body's condition output is its condition input (through Identity nodes)
    or a constant true: the body's own (an initializer or a Constant node) or an outer one
    it reads (torch's scripted loops: Identity of the main graph's true)."""
    producer = {out: inner for inner in body.nodes for out in inner.outputs if out}
    name = body.outputs[0].name
    while (made := producer.get(name)) is not None and made.op_type == "Identity":
        name = made.inputs[0]
    if name == body.inputs[1].name:
        return True
    if made is not None and made.op_type == "Constant":
        held = made.attrs.get("value")
        return isinstance(held, Tensor) and held.data.size == 1 and bool(held.data.reshape(()))
    outer = dict(zip(node.captures, node.inputs[len(node.inputs) - len(node.captures):],
                     strict=True))
    value = scalar_constant(constants_of(body), name)
    if value is None and name in outer:
        value = scalar_constant(constants, outer[name])
    return value is not None and bool(value)


def _unroll(node: Node, trips: int, namer: Namer, opset: int) -> tuple[list[Node], list[Tensor]]:
    """Return the M copies of the body, the scan outputs' Unsqueeze/Concat and the output
    Identity nodes, and the constants they add."""
    body = node.attrs["body"]
    assert isinstance(body, Graph)
    prefix, carried = node.label, len(body.inputs) - 2
    outer = dict(zip(node.captures, node.inputs[len(node.inputs) - len(node.captures):],
                     strict=True))
    shared = {t.name: namer(f"{prefix}/{t.name}") for t in body.initializers}
    tensors = [dataclasses.replace(t, name=shared[t.name]) for t in body.initializers]
    values = list(node.inputs[2:2 + carried])
    scans: list[list[str]] = [[] for _ in body.outputs[1 + carried:]]
    nodes: list[Node] = []
    for step in range(trips):
        rename = {**outer, **shared}
        iteration, condition = body.inputs[0], body.inputs[1]
        for info, constant in ((iteration, np.array(step, np.int64)),
                               (condition, np.array(True))):
            rank = 0 if info.type is None or info.type.shape is None else len(info.type.shape)
            rename[info.name] = namer(f"{prefix}/{step}/{info.name}")
            tensors.append(tensor(rename[info.name], constant.reshape((1,) * rank)))
        rename.update((info.name, name) for info, name in zip(body.inputs[2:], values,
                                                               strict=True))
        nodes += copy_body(body, rename, namer, f"{prefix}/{step}")
        outputs = [rename.get(info.name, info.name) for info in body.outputs]
        values = outputs[1:1 + carried]
        for store, name in zip(scans, outputs[1 + carried:], strict=True):
            store.append(name)
    for value, target in zip(values, node.outputs[:carried], strict=False):
        if target:
            nodes.append(make_node("Identity", [value], [target],
                                   name=namer(f"{prefix}/final_{target}")))
    for store, target in zip(scans, node.outputs[carried:], strict=False):
        if target:
            stacked, axes = stack_values(store, target, 0, namer, prefix, opset)
            nodes += stacked
            tensors += axes
    return nodes, tensors
