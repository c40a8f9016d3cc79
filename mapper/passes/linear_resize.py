"""A linear (bilinear) Resize as products with constant interpolation matrices, on the array.

Along each resized axis a the output is X @ W_a with the constant W_a [size_in, size_out] of
`resize_matrix` (axis a moved last by a Transpose and back when it is not last):

- `float_linear_resize` (float models, before post-training quantization): the Resize becomes
  [Transpose] -> MatMul(x, W_a) -> [Transpose] per axis; the quantizer then calibrates each
  step and quantizes W_a like any weights (QMatMul).
- `quantized_linear_resize` (after quantization): DQ(u) -> Resize -> Q(p) becomes, per axis,
  [Transpose(u)] -> DQ -> MatMul(DQ(W_q)) -> Q(p) -> [Transpose] on integers, W_q the int8
  weights of `quantized_weights` (power-of-two scale per column): with equal input and
  output parameters the requantization is a division by 2^k, so a dyadic resize (2x, 4x with
  half_pixel, pytorch_half_pixel or asymmetric) rounds its exact float result once per axis.
  Each axis after the first reads the previous one's integers (parameters p); the intermediate
  rounding is within half a step, so the result is within 1 step of the float QDQ semantics
  (DQ -> float resize -> Q) for dyadic weights, and the weights' own rounding (at most 2^-8
  of the neighbours' difference per tap) adds to that otherwise.

The axes go in the cheapest order (`resize_matrix`), but the last step must be a transposed
one (its Transpose a layout copy writing the result) unless the result only leaves the model:
a QMatMul writes contiguous rows, and a result a convolution or pooling also touches (an Add
with a conv output: LR-ASPP's classifier) is stored channel-last.

The DequantizeLinear and QuantizeLinear nodes made here are version 13 (`QDQ_VERSION`, as the
quantizer's), whatever the model's opset: the weights' per-column scale needs DequantizeLinear-13
(an opset-11 export quantized by onnxruntime has DequantizeLinear-10 elsewhere).

The last MatMul keeps the Resize's name (the report follows it); the rest are new nodes.
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from systolic.ir import DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_str,
    constants_of,
    make_node,
    replace_graph,
    tensor,
)
from systolic.mapper.passes.quant_params import NotFusable, per_tensor_params
from systolic.mapper.passes.quantize_float import QDQ_VERSION, is_quantized
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.resize_matrix import (
    LINEAR_MODES,
    AxisResize,
    linear_resize_axes,
    quantized_weights,
)

__all__ = ["float_linear_resize", "quantized_linear_resize"]

NOTE = ("a linear Resize, as a product with a constant interpolation matrix per resized axis "
        "(QMatMul on the array)")


def _swap_last(axis: int, rank: int) -> dict[str, tuple[int, ...]] | None:
    """The Transpose attributes that swap `axis` with the last one (None when it is last)."""
    if axis == rank - 1:
        return None
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return {"perm": tuple(perm)}


def float_linear_resize(model: Model, report: PassReport) -> Model:
    """Return float `model` with each float32 linear Resize/Upsample of static shape and
    constant scales or sizes as Transpose/MatMul steps (module docstring); `model` itself when
    none is, or when the model is quantized."""
    if is_quantized(model):
        return model
    graph = model.graph
    constants, namer, users = constants_of(graph), Namer(graph), graph.consumers()
    nodes: list[Node] = []
    added: list[Tensor] = []
    for node in graph.nodes:
        found = graph.type_of(node.inputs[0]) if _linear(node) else None
        if found is None or found.dtype != DataType.FLOAT:
            nodes.append(node)
            continue
        try:
            axes = linear_resize_axes(node, graph, constants,
                                      end_transposed=not _only_output(node, graph, users))
        except NotFusable:
            nodes.append(node)
            continue
        nodes += _float_steps(node, axes, len(found.shape or ()), namer, added)
        report.note(node.label, NOTE)
    if not added:
        return model
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def _linear(node: Node) -> bool:
    """True for a default-domain linear (bilinear) Resize or Upsample."""
    return (node.domain == "" and node.op_type in ("Resize", "Upsample")
            and attr_str(node, "mode", "nearest") in LINEAR_MODES)


def _only_output(node: Node, graph: Graph, users: Mapping[str, list[Node]]) -> bool:
    """True when `node`'s result is a graph output read by nothing else, or read only by
    DequantizeLinear nodes writing graph outputs: no spatial op can ask for it channel-last,
    so the last step may be a QMatMul along the last axis (module docstring). `users` is
    `graph.consumers()`."""
    outputs = {info.name for info in graph.outputs}
    readers = users.get(node.outputs[0], [])
    if node.outputs[0] in outputs:
        return not readers
    return bool(readers) and all(r.op_type == "DequantizeLinear" and r.outputs[0] in outputs
                                 and not users.get(r.outputs[0]) for r in readers)


def _float_steps(node: Node, axes: list[AxisResize], rank: int, namer: Namer,
                 added: list[Tensor]) -> list[Node]:
    """The float steps replacing `node`: per axis [Transpose] MatMul [Transpose]."""
    base, value, steps = node.name or node.outputs[0], node.inputs[0], []
    for index, step in enumerate(axes):
        last = index == len(axes) - 1
        perm = _swap_last(step.axis, rank)
        if perm is not None:
            moved = namer(f"{base}_axis{step.axis}_in")
            steps.append(make_node("Transpose", [value], [moved],
                                   name=namer(f"{base}_transpose{step.axis}"), attrs=perm))
            value = moved
        weights = namer(f"{base}_axis{step.axis}_weights")
        added.append(tensor(weights, step.weights.astype(np.float32)))
        result = node.outputs[0] if last and perm is None else namer(f"{base}_axis{step.axis}")
        name = node.name if last else namer(f"{base}_axis{step.axis}_matmul")
        steps.append(make_node("MatMul", [value, weights], [result], name=name))
        value = result
        if perm is not None:
            back = node.outputs[0] if last else namer(f"{base}_axis{step.axis}_out")
            steps.append(make_node("Transpose", [value], [back],
                                   name=namer(f"{base}_transpose{step.axis}_back"), attrs=perm))
            value = back
    return steps


def quantized_linear_resize(model: Model, report: PassReport) -> Model:
    """Return `model` with each DQ(u) -> linear Resize -> Q(p) (per-tensor 8-bit parameters,
    the Q its only reader, not a graph output) as integer steps per resized axis (module
    docstring); `model` itself when there is none."""
    graph = model.graph
    constants, namer = constants_of(graph), Namer(graph)
    producers, readers = graph.producers(), graph.consumers()
    outputs = {info.name for info in graph.outputs}
    replaced: dict[int, list[Node]] = {}
    added: list[Tensor] = []
    for node in graph.nodes:
        if not _linear(node):  # a nearest one is dequantize_after_layout's
            continue
        try:
            dq, q = _borders(node, producers, readers, outputs, constants)
            axes = linear_resize_axes(node, graph, constants,
                                      end_transposed=not _only_output(q, graph, readers))
        except NotFusable as reason:
            report.note(node.label, str(reason))
            continue
        rank = len(graph.type_of(node.inputs[0]).shape or ())  # type: ignore[union-attr]
        replaced[id(node)] = _integer_steps(node, axes, rank, (dq, q), (namer, added))
        replaced[id(q)] = []
        report.note(node.label, NOTE)
    if not replaced:
        return model
    nodes = [new for old in graph.nodes for new in replaced.get(id(old), [old])]
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def _borders(node: Node, producers: Mapping[str, Node], readers: Mapping[str, list[Node]],
             outputs: set[str], constants: Mapping[str, np.ndarray]) -> tuple[Node, Node]:
    """The DequantizeLinear feeding `node` and the QuantizeLinear reading it (per tensor,
    8-bit), or NotFusable."""
    dq = producers.get(node.inputs[0])
    if dq is None or dq.op_type != "DequantizeLinear" or dq.domain != "":
        raise NotFusable("the data input is not read through a DequantizeLinear")
    users = readers.get(node.outputs[0], [])
    if node.outputs[0] in outputs or len(users) != 1 or users[0].op_type != "QuantizeLinear":
        raise NotFusable("its output is not read by one QuantizeLinear only")
    for border, what in ((dq, "input"), (users[0], "output")):
        zero = border.inputs[2] if len(border.inputs) > 2 and border.inputs[2] else None
        per_tensor_params(constants, border.inputs[1], zero, what)
    return dq, users[0]


def _integer_steps(node: Node, axes: list[AxisResize], rank: int, borders: tuple[Node, Node],
                   made: tuple[Namer, list[Tensor]]) -> list[Node]:
    """The integer steps replacing `node` and its Q: per axis [Transpose] DQ MatMul Q
    [Transpose], the last Q the original one (its output name kept)."""
    (dq, q), (namer, added) = borders, made
    base, value, steps = node.name or node.outputs[0], dq.inputs[0], []
    params = list(dq.inputs[1:])
    for index, step in enumerate(axes):
        last, perm = index == len(axes) - 1, _swap_last(step.axis, rank)
        tag = f"{base}_axis{step.axis}"
        if perm is not None:
            moved = namer(f"{tag}_in")
            steps.append(make_node("Transpose", [value], [moved],
                                   name=namer(f"{tag}_transpose"), attrs=perm))
            value = moved
        real, product, integers = namer(f"{tag}_real"), namer(f"{tag}_product"), namer(tag)
        steps.append(make_node("DequantizeLinear", [value, *params], [real],
                               name=namer(f"{tag}_dequantize"), version=QDQ_VERSION))
        steps.append(make_node("MatMul", [real, _weights(tag, step, namer, added, steps)],
                               [product], name=node.name if last else namer(f"{tag}_matmul")))
        if last and perm is None:
            steps.append(dataclasses.replace(q, inputs=(product, *q.inputs[1:])))
            return steps
        quantize = q.inputs[1:] if last else params  # the input's range holds every step
        steps.append(make_node("QuantizeLinear", [product, *quantize], [integers],
                               name=namer(f"{tag}_quantize"), version=QDQ_VERSION))
        value = integers
        if perm is not None:
            back = q.outputs[0] if last else namer(f"{tag}_out")
            steps.append(make_node("Transpose", [value], [back],
                                   name=namer(f"{tag}_transpose_back"), attrs=perm))
            value = back
    return steps


def _weights(tag: str, step: AxisResize, namer: Namer, added: list[Tensor],
             steps: list[Node]) -> str:
    """Add the int8 weights of `step` with their per-column scale and DequantizeLinear
    (appended to `steps`); return the DequantizeLinear's output."""
    values, scales = quantized_weights(step.weights)
    names = [namer(f"{tag}_weights_i8"), namer(f"{tag}_weights_scale"),
             namer(f"{tag}_weights_zero_point")]
    added += [tensor(names[0], values), tensor(names[1], scales),
              tensor(names[2], np.zeros(scales.shape, np.int8))]
    real = namer(f"{tag}_weights")
    steps.append(make_node("DequantizeLinear", names, [real], name=namer(f"{tag}_weights_dq"),
                           version=QDQ_VERSION, attrs={"axis": 1}))
    return real
