"""A constant additive mask with -inf entries (a causal triangle registered as a buffer and
exported as a constant, torch.full((S, S), -inf).triu(1)) added to scores before a Softmax
over the last axis: its -inf entries become the lowest finite value of its type.

softmax(s + m) is the same float for m = -inf and m = lowest in every row that keeps a finite
entry of the mask: exp of the masked distance is 0 either way and the row's maximum comes from
a kept position. So the rewrite is made only when every row of the mask, broadcast to the sum's
shape, holds a finite value (a row of -inf alone would give NaN with -inf, a uniform row with the
lowest value). The mask is then finite, so post-training quantization takes it as a
whole-tensor constant of its Adds, cut at the softmax floor (`softmax_ranges`).
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.ir import Graph, Model, Node
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_int,
    constants_of,
    rename_inputs,
    replace_graph,
    tensor,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["finite_constant_masks"]


def _softmax_rows_kept(graph: Graph, name: str, value: np.ndarray,
                       consumers: Mapping[str, list[Node]]) -> bool:
    """True when constant `name` is read only by Adds whose results only Softmaxes over the
    last axis (opset 13 or later) read, and every last-axis row of `value` broadcast to each
    Add's static result shape holds a finite entry."""
    readers = consumers.get(name, [])
    if not readers:
        return False
    for add in readers:
        if add.op_type != "Add" or add.domain != "" or len(add.inputs) != 2:
            return False
        found = graph.type_of(add.outputs[0])
        if found is None or found.shape is None or not found.is_static or not found.shape:
            return False
        shape = tuple(int(d) for d in found.shape)  # type: ignore[arg-type]
        softmaxes = consumers.get(add.outputs[0], [])
        if not softmaxes or any(not _last_axis_softmax(s, len(shape)) for s in softmaxes):
            return False
        try:
            rows = np.broadcast_to(value, shape)
        except ValueError:
            return False
        if not bool(np.isfinite(rows).any(axis=-1).all()):
            return False
    return True


def _last_axis_softmax(node: Node, rank: int) -> bool:
    if node.op_type != "Softmax" or node.domain != "" or not node.version or node.version < 13:
        return False
    return attr_int(node, "axis", -1) % rank == rank - 1


def finite_constant_masks(model: Model, report: PassReport) -> Model:
    """Return `model` with each such constant mask (module docstring) finite; `model` itself
    when there is none. `report` is not written (the Adds are fused or not later)."""
    graph = model.graph
    consumers, namer = graph.consumers(), Namer(graph)
    added, renamed = [], {}
    for name, value in constants_of(graph).items():
        if (value.dtype.kind != "f" or value.size <= 1 or not np.isneginf(value).any()
                or np.isnan(value).any() or np.isposinf(value).any()
                or not _softmax_rows_kept(graph, name, value, consumers)):
            continue
        renamed[name] = namer(f"{name}_finite")
        added.append(tensor(renamed[name], np.where(np.isneginf(value),
                                                    np.finfo(value.dtype).min, value)))
    if not added:
        return model
    nodes = [rename_inputs(n, renamed) if set(n.inputs) & renamed.keys() else n
             for n in graph.nodes]
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))
