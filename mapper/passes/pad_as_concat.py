"""A constant-mode Pad of a float tensor along one axis becomes a Concat with constant blocks.

EfficientViT's linear attention pads v with ones (F.pad(v, (0, 1), value=1)) so that one
product gives both the numerator and the normaliser: Pad ran on the host (no accelerator
operator). Concat(before, x, after) along the padded axis, the blocks constants of x's shape
there `pads` long and filled with the pad value, is the same tensor (exact). Once quantized,
the blocks take the Concat's parameters (`quantize_float`, `quantize_before_layout`) and
the Concat is an integer layout op: the accelerator copies x and the constant in place.

Taken for a float32 x of static shape, mode "constant", constant non-negative pads on
exactly one axis (opset 2-10 attributes or opset 11+ inputs, without `axes`), a constant pad
value (or a QDQ model's DequantizeLinear of one; 0 when absent), and at most `MAX_BLOCK_ELEMENTS` elements of padding. Other Pads stay.
"""

import dataclasses
import math

import numpy as np

from systolic.ir import DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_float,
    attr_ints,
    attr_str,
    constants_of,
    make_node,
    replace_graph,
    splice,
    tensor,
)
from systolic.mapper.passes.instance_norm import constant_value
from systolic.mapper.passes.report import PassReport

__all__ = ["MAX_BLOCK_ELEMENTS", "pad_as_concat"]

MAX_BLOCK_ELEMENTS = 1 << 20
"""The most elements of padding made a constant."""


def pad_as_concat(model: Model, report: PassReport) -> Model:
    """Return `model` with each such Pad (module docstring) as a Concat of constant blocks
    and its input; `model` itself when there is none."""
    graph = model.graph
    constants, producers, opsets = constants_of(graph), graph.producers(), dict(model.opsets)
    namer, added, replaced = Namer(graph), [], {}
    for node in graph.nodes:
        found = _padding(graph, node, constants, producers, opsets)
        if found is None:
            continue
        shape, axis, (before, after), value = found
        nodes, blocks = _concat(node, shape, axis, (before, after), value, namer)
        replaced[id(node)] = nodes
        added.extend(blocks)
        report.note(node.label, "a constant Pad along one axis: a Concat with constant blocks")
    if not replaced:
        return model
    return dataclasses.replace(model, graph=replace_graph(
        graph, splice(graph.nodes, replaced, set()), added))


def _padding(graph: Graph, node: Node, constants: dict[str, np.ndarray],
             producers: dict[str, Node], opsets: dict[str, int]
             ) -> tuple[tuple[int, ...], int, tuple[int, int], float] | None:
    """(x's shape, the padded axis, its (before, after) pads, the value: a constant or, in a
    QDQ model, a DequantizeLinear of one) for a Pad taken."""
    if node.op_type != "Pad" or node.domain != "" or attr_str(node, "mode", "constant") != (
            "constant"):
        return None
    found = graph.type_of(node.inputs[0])
    if (found is None or found.shape is None or not found.is_static
            or found.dtype != DataType.FLOAT):
        return None
    shape = tuple(int(d) for d in found.shape)  # type: ignore[arg-type]
    if len(node.inputs) == 1:  # opset 2-10: attributes
        pads = attr_ints(node, "pads")
        value = attr_float(node, "value", 0.0)
    else:
        names = list(node.inputs) + [""] * (4 - len(node.inputs))
        fill = constant_value(names[2], constants, producers, opsets) if names[2] else None
        if names[3] or names[1] not in constants or (names[2] and fill is None):
            return None
        pads = tuple(int(p) for p in constants[names[1]].reshape(-1))
        value = float(fill.reshape(-1)[0]) if fill is not None else 0.0
    if pads is None or len(pads) != 2 * len(shape) or min(pads) < 0:
        return None
    axes = [a for a in range(len(shape)) if pads[a] or pads[a + len(shape)]]
    if len(axes) != 1:
        return None
    axis = axes[0]
    ends = (pads[axis], pads[axis + len(shape)])
    if math.prod(shape) // max(shape[axis], 1) * sum(ends) > MAX_BLOCK_ELEMENTS:
        return None
    return shape, axis, ends, value


def _concat(node: Node, shape: tuple[int, ...], axis: int, ends: tuple[int, int],
            value: float, namer: Namer) -> tuple[list[Node], list[Tensor]]:
    """The Concat replacing Pad `node` and its constant blocks."""
    base = node.name or node.outputs[0]
    blocks, inputs = [], []
    for side, length in zip(("before", "after"), ends, strict=True):
        if not length:
            continue
        block_shape = shape[:axis] + (length,) + shape[axis + 1:]
        name = namer(f"{base}_{side}")
        blocks.append(tensor(name, np.full(block_shape, value, np.float32)))
        inputs.append(name)
    inputs.insert(1 if ends[0] else 0, node.inputs[0])
    concat = make_node("Concat", inputs, node.outputs, name=node.name or namer(base),
                       attrs={"axis": axis})
    return [concat], blocks
