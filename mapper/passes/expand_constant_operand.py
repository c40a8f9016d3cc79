"""A quantized constant that an Add or Mul broadcasts over its other operand gets a shape the
fusions and the vector unit take: the other operand's rank, and where it is neither per
channel nor along the last axis, the other operand's whole shape.

onnxruntime's QDQ quantizer keeps a constant operand's own shape: a group norm's scale
[C, 1] beside x [1, C, T] (wav2vec2), an attention bias [H, S, S] beside the scores
[1, H, S, S] (LeViT), a relative-position bias [1, H, S, S] beside [B, H, S, S] windows
(Swin). `fuse_qdq` fuses a constant per channel ([1, C, 1, ...]), along the last axis, or of
the other operand's own shape; so the 8-bit constant C read by DequantizeLinear D (one scale
and zero point) whose readers are all Add/Mul of one other operand's static shape S becomes:

- C reshaped to S's rank, leading axes of 1 (exact, no new bytes), when that makes it S or
  per channel of S;
- else `broadcast_to(C, S)`: every element C stood for is stored (at most
  `MAX_EXPANDED_BYTES`).

A C already per channel or along the last axis of S, or of one element (a table's constant),
is left as it is.

D then dequantizes the new constant; the sum or product computes exactly what it did.

A constant whose readers broadcast it over operands of several shapes (a rotary embedding's
cos/sin table [1, 1, S, D] multiplied into the queries [1, H, S, D] and, under grouped-query
attention, the keys [1, KV, S, D]) gets one copy per shape, each read by the readers of that
shape (for D: a DequantizeLinear of the same parameters per copy). A reader that is not such
an Add/Mul leaves the constant as it is.
"""

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from systolic.ir import Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    rename_inputs,
    replace_graph,
    tensor,
)
from systolic.mapper.passes.report import PassReport
from systolic.reference.ops.op_systolic_qmul import last_axis_broadcast, per_channel_broadcast

__all__ = ["MAX_EXPANDED_BYTES", "expand_constant_operand", "expand_float_constant",
           "expanded_shape"]

MAX_EXPANDED_BYTES = 1 << 20
"""The most bytes a constant is expanded to (a larger one stays as it is, on the host)."""

_READERS = frozenset({"Add", "Mul"})


def expanded_shape(constant: tuple[int, ...], other: tuple[int, ...]) -> tuple[int, ...] | None:
    """Return the shape a constant of shape `constant` takes beside an operand of shape
    `other` (module docstring), or None when it keeps its own (already fused as it is, not
    broadcast to `other`, or too large)."""
    if (len(constant) > len(other) or constant == other or math.prod(constant) <= 1
            or per_channel_broadcast(other, constant) or last_axis_broadcast(other, constant)):
        return None
    try:
        if np.broadcast_shapes(constant, other) != other:
            return None
    except ValueError:
        return None
    padded = (1,) * (len(other) - len(constant)) + constant
    if padded == other or per_channel_broadcast(other, padded):
        return padded
    return other if math.prod(other) <= MAX_EXPANDED_BYTES else None


def _other_shape(node: Node, name: str, shape_of: Mapping[str, tuple[int, ...] | None]
                 ) -> tuple[int, ...] | None:  # fmt: skip
    others = [i for i in node.inputs if i != name]
    if node.op_type not in _READERS or node.domain != "" or len(others) != 1:
        return None
    return shape_of.get(others[0])


def _static_shapes(model: Model) -> dict[str, tuple[int, ...] | None]:
    shapes: dict[str, tuple[int, ...] | None] = {}
    for node in model.graph.nodes:
        for name in node.inputs:
            t = model.graph.type_of(name) if name else None
            static = t is not None and t.shape is not None and t.is_static
            shapes[name] = tuple(int(d) for d in t.shape) if static else None  # type: ignore[union-attr, arg-type]
    return shapes


def _shape_groups(readers: list[Node], name: str,
                  shapes: Mapping[str, tuple[int, ...] | None]
                  ) -> dict[tuple[int, ...], list[Node]]:  # fmt: skip
    """The readers of `name` by the static shape of their other operand, when every reader is
    an Add/Mul beside one operand of a static shape; else no group."""
    groups: dict[tuple[int, ...], list[Node]] = {}
    for reader in readers:
        other = _other_shape(reader, name, shapes)
        if other is None:
            return {}
        groups.setdefault(other, []).append(reader)
    return groups


def _expansions(value: np.ndarray, groups: Mapping[tuple[int, ...], list[Node]]
                ) -> list[tuple[tuple[int, ...], list[Node]]]:  # fmt: skip
    """(expanded shape, readers) of each group whose operand shape expands the constant."""
    found = []
    for other, readers in groups.items():
        shape = expanded_shape(tuple(value.shape), other)
        if shape is not None:
            found.append((shape, readers))
    return found


def _expanded(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    padded = value.reshape((1,) * (len(shape) - value.ndim) + value.shape)
    return np.ascontiguousarray(np.broadcast_to(padded, shape))


def _replace_inputs(model: Model, renamed: list[tuple[Node, dict[str, str]]],
                    added: list[Tensor], after: Mapping[int, list[Node]] | None = None) -> Model:
    """`model` with the readers renamed, the constants added and each node of `after[id(n)]`
    placed right after node n."""
    if not added:
        return model
    graph = model.graph
    swap: dict[int, dict[str, str]] = {}
    for node, mapping in renamed:
        swap.setdefault(id(node), {}).update(mapping)
    nodes: list[Node] = []
    for n in graph.nodes:
        nodes.append(rename_inputs(n, swap[id(n)]) if id(n) in swap else n)
        nodes += (after or {}).get(id(n), [])
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def expand_constant_operand(model: Model, report: PassReport) -> Model:
    """Return `model` with each such constant (module docstring) replaced by its expanded
    copy; `model` itself when there is none. `report` is not written: D and its readers are
    fused (or not) later, as before."""
    graph = model.graph
    constants, consumers = constants_of(graph), graph.consumers()
    shapes, namer = _static_shapes(model), Namer(graph)
    added: list[Tensor] = []
    renamed: list[tuple[Node, dict[str, str]]] = []
    after: dict[int, list[Node]] = {}
    for node in graph.nodes:
        if node.op_type != "DequantizeLinear" or node.domain != "":
            continue
        value = constants.get(node.inputs[0])
        params = [constants.get(n) for n in node.inputs[1:] if n]
        if (value is None or value.dtype not in (np.int8, np.uint8)
                or any(p is None or p.size != 1 for p in params)):
            continue
        groups = _shape_groups(consumers.get(node.outputs[0], []), node.outputs[0], shapes)
        for shape, readers in _expansions(value, groups):
            name = namer(f"{node.inputs[0]}_expanded")
            added.append(tensor(name, _expanded(value, shape)))
            if len(groups) == 1:  # every reader: D itself reads the copy
                renamed.append((node, {node.inputs[0]: name}))
                continue
            copy = dataclasses.replace(node, inputs=(name, *node.inputs[1:]),
                                       outputs=(namer(f"{node.outputs[0]}_expanded"),),
                                       name=namer(f"{node.name}_expanded"))
            after.setdefault(id(node), []).append(copy)
            renamed += [(r, {node.outputs[0]: copy.outputs[0]}) for r in readers]
    return _replace_inputs(model, renamed, added, after)


def expand_float_constant(model: Model, report: PassReport) -> Model:
    """The same for a float32 constant that Add/Mul nodes read directly (a group norm's [C, 1]
    scale and shift; Swin's relative-position bias; a rotary embedding's cos/sin table), before
    the per-channel passes and post-training quantization, so they see it per channel or of
    its operand's shape; `model` itself when there is none. `report` is not written."""
    graph = model.graph
    consumers, shapes, namer = graph.consumers(), _static_shapes(model), Namer(graph)
    added: list[Tensor] = []
    renamed: list[tuple[Node, dict[str, str]]] = []
    for constant in graph.initializers:
        value = constant.data
        if value.dtype != np.float32:
            continue
        groups = _shape_groups(consumers.get(constant.name, []), constant.name, shapes)
        for shape, readers in _expansions(value, groups):
            name = namer(f"{constant.name}_expanded")
            added.append(tensor(name, _expanded(value, shape)))
            renamed += [(r, {constant.name: name}) for r in readers]
    return _replace_inputs(model, renamed, added)
