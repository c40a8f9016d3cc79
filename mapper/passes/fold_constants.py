"""Constant folding: evaluate every node whose inputs are all known before running.

A node folds when all its inputs are constants (initializers, or values folded before it),
or when shape inference alone gives its outputs' values (Shape, Size of a statically shaped
tensor, and what follows from them: Gather, Unsqueeze, Concat ...). The values come from the
reference operator itself (`run`, or `infer` for the shape-only case), so folding computes
exactly what the executor would. Graph inputs that have an initializer are frozen to it
first (the integer graph has fixed weights). QuantizeLinear and DequantizeLinear are never
folded: they mark the quantization the later passes fuse. Nodes producing graph outputs stay.
A folded value becomes a read-only initializer without a second copy. A large ConstantOfShape
(the onnx wheel's light models hold their weights so: VGG-19's 143 M floats) folds into a
read-only view of its one value, no memory filled (`constant_layout`); an operator reading
such a view gets it as it is when it only moves or converts values (VIEW_SAFE), else filled
in (a float product over a zero-stride operand sums in another order).
"""

import dataclasses

import numpy as np

from systolic.ir import DataType, Model, Node, Tensor, TensorType
from systolic.mapper.passes.constant_layout import c_contiguous, is_repeated
from systolic.mapper.passes.graph_tools import constants_of
from systolic.mapper.passes.report import FOLDED, PassReport
from systolic.reference.executor import make_op
from systolic.reference.ops.base import Op, TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning

__all__ = ["fold_constants"]

NEVER_FOLDED = frozenset({"QuantizeLinear", "DequantizeLinear"})
"""Quantization markers: folding DequantizeLinear(int8 weights) would hide the weights'
integer values from the fusion passes."""

VIEW_SAFE = frozenset({"Shape", "Size", "Identity", "Reshape", "Flatten", "Squeeze",
                       "Unsqueeze", "Transpose", "Expand", "Cast"})
"""Operators whose every output element is one input element (or its type conversion) or a
shape: they read a repeated-value view as it is; every other operator gets it filled in."""


def fold_constants(model: Model, report: PassReport) -> Model:
    """Return `model` with every foldable node replaced by initializers."""
    graph = model.graph
    opsets = dict(model.opsets)
    constants = constants_of(graph)
    types = {info.name: info.type for info in (*graph.inputs, *graph.value_info,
                                                 *graph.outputs)}
    outputs = {info.name for info in graph.outputs}
    kept: list[Node] = []
    folded: list[Tensor] = []
    for node in graph.nodes:
        values = None
        if node.op_type not in NEVER_FOLDED and not outputs.intersection(node.outputs):
            values = _evaluate(node, opsets, constants, types)
        if values is None:
            kept.append(node)
            continue
        for name, value in zip(node.outputs, values, strict=False):
            if name:
                constants[name] = value
                folded.append(_frozen(name, value))
        report.record(node.label, FOLDED)
    frozen = {t.name for t in graph.initializers}
    inputs = tuple(info for info in graph.inputs if info.name not in frozen)
    new_graph = dataclasses.replace(graph, nodes=tuple(kept), inputs=inputs,
                                    initializers=graph.initializers + tuple(folded))
    return dataclasses.replace(model, graph=new_graph)


def _evaluate(
    node: Node,
    opsets: dict[str, int],
    constants: dict[str, np.ndarray],
    types: dict[str, TensorType],
) -> list[np.ndarray] | None:
    """Return the node's output values when they are known before running, else None."""
    op = make_op(node, opsets)
    names = [name for name in node.inputs if name]
    if all(name in constants for name in names):
        if node.op_type == "ConstantOfShape":
            return [_constant_of_shape(op, constants[node.inputs[0]])]
        results = op.run([_as_read(node, constants[name]) if name else None
                          for name in node.inputs])
        return [np.asarray(r) for r in results]
    infos: list[TensorInfo | None] = []
    for name in node.inputs:
        if not name:
            infos.append(None)
        elif name in constants:
            value = constants[name]
            infos.append(TensorInfo(DataType.from_numpy(value.dtype), tuple(value.shape), value))
        else:
            declared = types.get(name)
            if declared is None or declared.shape is None or not declared.is_static:
                return None
            infos.append(TensorInfo(declared.dtype, tuple(int(d) for d in declared.shape
                                                          if isinstance(d, int))))
    try:
        results_info = op.infer(infos)
    except ShapeKnownWhenRunning:  # (If, Loop, Scan: sizes known only when running)
        return None
    if any(info.value is None for info in results_info):
        return None
    return [np.asarray(info.value) for info in results_info]


def _constant_of_shape(op: Op, shape: np.ndarray) -> np.ndarray:
    """Return ConstantOfShape's output for `shape`: filled when small (FOLD_LIMIT elements,
    as inference computes it), else a read-only view of its one value (no memory)."""
    info = TensorInfo(DataType.from_numpy(shape.dtype), tuple(shape.shape), shape)
    (result,) = op.infer([info])  # checks the shape, computes small outputs
    if result.value is not None:
        return np.asarray(result.value)
    (one,) = op.run([np.ones(len(result.shape), np.int64)])  # the value, of the output's rank
    return np.broadcast_to(one, result.shape)


def _as_read(node: Node, value: np.ndarray) -> np.ndarray:
    """Return constant `value` as `node` reads it: a repeated-value view filled in unless the
    operator only moves values (VIEW_SAFE)."""
    if node.op_type in VIEW_SAFE or not is_repeated(value):
        return value
    return np.ascontiguousarray(value)


def _frozen(name: str, value: np.ndarray) -> Tensor:
    """Return initializer `name` holding `value` as a C-contiguous array (a copy only when it
    is not one: a transposed view, say, is laid out as `graph_tools.tensor` lays it), made
    read-only in place: a fresh result of the operator, or a view of read-only constants,
    which nobody writes. A repeated-value view stays the view (`constant_layout`)."""
    data = c_contiguous(value)
    if data.flags.writeable:
        data.flags.writeable = False
    return Tensor(name, DataType.from_numpy(data.dtype), data)
