"""Count the multiply-accumulates inside the subgraphs of If, Loop and Scan nodes.

A subgraph's value types come from inferring it with the node's outer types, as the reference
operators do (`systolic.reference.ops.op_if.infer_graph`): captures take the types of the node
inputs standing for them, a Loop body's inputs the iteration number, condition and carried
values, a Scan body's the states and one slice of every scan input. Then:

- If: the larger branch's MACs (which branch runs is known only when running, unless a pass
  folded the If away);
- Loop: the body's MACs (as inferred for the first iteration, number 0) times the trip count,
  when M is a known constant and no condition stops it earlier, or the condition is decided by
  constants (`mapper.loop_control`: tf2onnx's while loops), else the first size of a
  scan output, when static; unknown: 0;
- Scan: the body's MACs times the sequence length (Scan-8: times the batch too).

Each count comes with a one-line note saying how it was made, for `inspect`'s reason and JSON.
"""

from collections.abc import Callable

import numpy as np

import systolic.reference.executor  # noqa: F401  (installs the services infer_graph uses)
from systolic.errors import SystolicError
from systolic.ir import DataType, Graph, Node, TensorType
from systolic.mapper.loop_control import controlled_trips
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_if import infer_graph

__all__ = ["NodeCounter", "subgraph_macs"]

CONTROL_LIMIT = 4096
"""The most iterations a while loop's condition is followed to count its trips."""

TypeOf = Callable[[str], TensorType | None]
ValueOf = Callable[[str], np.ndarray | None]
NodeCounter = Callable[[Node, TypeOf, ValueOf], tuple[int, str]]
"""Counts one node's MACs: (node, type_of, value_of) -> (MACs, note)."""


def subgraph_macs(node: Node, type_of: TypeOf, value_of: ValueOf,
                  count: NodeCounter) -> tuple[int, str]:
    """Return (MACs, note) of a node with subgraphs; `count` counts each inner node."""
    own = node.own_inputs
    outer = {name: _info(type_of(value), value_of(value)) for name, value in zip(
        node.captures, node.inputs[len(own):], strict=True)}
    scope = {name: info for name, info in outer.items() if info is not None}
    if node.op_type == "If":
        return _if_macs(node, scope, count)
    body = node.attrs.get("body")
    if not isinstance(body, Graph):
        return 0, ""
    inputs = [_info(type_of(name)) if name else None for name in own]
    if node.op_type == "Loop":
        return _loop_macs(node, body, inputs, scope, type_of, value_of, count)
    if node.op_type == "Scan":
        return _scan_macs(node, body, inputs, scope, count)
    return 0, ""


def _if_macs(node: Node, scope: dict[str, TensorInfo], count: NodeCounter) -> tuple[int, str]:
    found = sorted((name, _graph_macs(branch, scope, count))
                   for name, branch in node.subgraphs)
    runnable = [(macs, name) for name, macs in found if macs is not None]
    if not runnable:
        return 0, "no branch takes these shapes"
    macs, name = max(runnable)
    each = ", ".join(f"{branch} {'cannot take these shapes' if n is None else n}"
                     for branch, n in found)
    return macs, (f"MACs of the larger branch, {name} ({each}); which runs is known only "
                  "when running")


def _loop_macs(node: Node, body: Graph, inputs: list[TensorInfo | None],
               scope: dict[str, TensorInfo], type_of: TypeOf, value_of: ValueOf,
               count: NodeCounter) -> tuple[int, str]:
    names = [info.name for info in body.inputs]
    # The first iteration's number: a body that slices by it (torch's x[i:i+1]) has static
    # types then; its MACs are taken as every iteration's.
    first = np.zeros((1,) * len(body.inputs[0].type.shape or ()) if body.inputs[0].type
                     else (), np.int64)
    cond = value_of(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    scope = {**scope, names[0]: TensorInfo(DataType.INT64, first.shape, first),
             names[1]: TensorInfo(DataType.BOOL, () if cond is None else cond.shape, cond)}
    for name, info in zip(names[2:], inputs[2:], strict=False):
        if info is not None:
            scope[name] = info
    known: dict[str, TensorInfo] = {}
    per_trip = _graph_macs(body, scope, count, known) or 0
    held = known.get(body.outputs[0].name)
    stays_true = held is not None and held.value is not None and bool(held.value.all())
    trips = _trip_count(node, body, type_of, value_of, stays_true)
    if trips is None:
        return 0, (f"{per_trip} MACs per iteration; the trip count is known only when "
                   "running")
    return per_trip * trips, (f"{trips} iterations of the body's {per_trip} MACs (as "
                              "counted for the first)")


def _trip_count(node: Node, body: Graph, type_of: TypeOf, value_of: ValueOf,
                stays_true: bool) -> int | None:
    """The loop's iteration count: M's value when no cond input may stop it earlier (none,
    or one the body keeps true: `stays_true`), else the static first size of a scan output;
    None when unknown."""
    trip = value_of(node.inputs[0]) if node.inputs and node.inputs[0] else None
    has_cond = len(node.inputs) > 1 and bool(node.inputs[1])
    if trip is not None and trip.size == 1 and (stays_true or not has_cond):
        return max(0, int(trip.reshape(-1)[0]))
    if has_cond and (trip is None or trip.size == 1):
        constants = {name: value for name in node.inputs
                     if name and (value := value_of(name)) is not None}
        if node.inputs[1] in constants:  # a while loop decided by constants (tf2onnx's)
            found = controlled_trips(node, constants, type_of, None if trip is None
                                     else int(trip.reshape(-1)[0]), CONTROL_LIMIT)
            if found is not None:
                return found
    carried = len(body.inputs) - 2
    for name in node.outputs[carried:]:
        shape = _info(type_of(name)) if name else None
        if shape is not None and shape.shape:
            return shape.shape[0]
    return None


def _scan_macs(node: Node, body: Graph, inputs: list[TensorInfo | None],
               scope: dict[str, TensorInfo], count: NodeCounter) -> tuple[int, str]:
    scanned = node.attrs.get("num_scan_inputs")
    batched = len(inputs) == len(body.inputs) + 1  # Scan-8: sequence_lens first
    values = inputs[1:] if batched else inputs
    if not isinstance(scanned, int) or any(info is None for info in values):
        return 0, "the scan inputs' shapes are unknown"
    states = len(body.inputs) - scanned
    given = node.attrs.get("scan_input_axes", (0,) * scanned)
    axes = [0] * scanned if batched or not isinstance(given, tuple) else [
        v for v in given if isinstance(v, int)]
    if len(axes) != scanned:
        return 0, "the scan_input_axes are malformed"
    skip = 1 if batched else 0
    body_scope = dict(scope)
    length = 0
    for index, (formal, info) in enumerate(zip(body.inputs, values, strict=True)):
        assert info is not None
        if index < states:
            body_scope[formal.name] = TensorInfo(info.dtype, info.shape[skip:])
            continue
        axis = skip + axes[index - states] % (len(info.shape) - skip)
        length = info.shape[axis]
        body_scope[formal.name] = TensorInfo(info.dtype, info.shape[skip:axis]
                                             + info.shape[axis + 1:])
    batch = values[0].shape[0] if batched and values[0] is not None else 1
    per_step = _graph_macs(body, body_scope, count) or 0
    return per_step * length * batch, f"{length * batch} steps of the body's {per_step} MACs"


def _graph_macs(graph: Graph, scope: dict[str, TensorInfo], count: NodeCounter,
                known: dict[str, TensorInfo] | None = None) -> int | None:
    """Sum the MACs of `graph`'s nodes, their types inferred from `scope` (None when the
    graph cannot take these types: an If branch that cannot run); `known` receives every
    value inferred."""
    known = {} if known is None else known
    try:
        infer_graph(graph, scope, known)
    except SystolicError:
        return None
    constants = {t.name: np.asarray(t.data) for t in graph.initializers}

    def type_of(name: str) -> TensorType | None:
        info = known.get(name)
        return None if info is None else TensorType(info.dtype, info.shape)

    def value_of(name: str) -> np.ndarray | None:
        info = known.get(name)
        return constants.get(name) if info is None or info.value is None else info.value

    return sum(count(node, type_of, value_of)[0] for node in graph.nodes)


def _info(tensor_type: TensorType | None, value: np.ndarray | None = None
          ) -> TensorInfo | None:
    """The static type (and constant `value`) as inference holds it, or None (unknown or
    dynamic shape)."""
    if value is not None:
        return TensorInfo(DataType.from_numpy(value.dtype), tuple(value.shape), value)
    if tensor_type is None or not tensor_type.is_static or tensor_type.shape is None:
        return None
    return TensorInfo(tensor_type.dtype,
                      tuple(d for d in tensor_type.shape if isinstance(d, int)))
