"""A DequantizeLinear of a one-element constant (or of the QuantizeLinear of one) read only by
element-wise ops becomes the float constant it computes (onnxruntime's static QDQ quantizer quantizes every input of a
Mul or Add, the scalar constants too: BERT's 1/sqrt(d) scaling, GELU's 0.5 and 1/sqrt(2),
LayerNorm's epsilon).

The value is the reference DequantizeLinear's own result, so the model computes exactly what
it did. Kept as float, the scalar is a constant of the element-wise region around it: a
function of one quantized tensor (one activation table), a layer normalization's epsilon;
dequantized, it counted as a second quantized tensor and the op stayed on the host. Biases
(int32), weights (any reader that is not element-wise) and larger constants are untouched.

`fold_scalar_quantize`: in a QOperator model, the QuantizeLinear of a one-element constant
read only by QLinearAdd/QLinearMul operands becomes the integer constant it computes, so
that `normalize_qoperator` sees x + c, x * c with a constant c: one table.
"""

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from systolic.ir import DataType, Model, Node
from systolic.mapper.passes.fuse_tables import ELEMENTWISE
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    rename_inputs,
    replace_graph,
    tensor,
)
from systolic.mapper.passes.report import FOLDED, PassReport
from systolic.reference.executor import make_op

__all__ = ["fold_scalar_dequantize", "fold_scalar_quantize"]

_QLINEAR_PAIRS = frozenset({"QLinearAdd", "QLinearMul"})

_EIGHT_OR_SIXTEEN_BIT = frozenset({DataType.INT8, DataType.UINT8, DataType.INT16,
                                   DataType.UINT16})


@dataclasses.dataclass(frozen=True)
class _Scope:
    """What a fold looks up in the graph."""

    constants: dict[str, np.ndarray]
    consumers: Mapping[str, list[Node]]
    producers: Mapping[str, Node]
    opsets: dict[str, int]
    outputs: set[str]


Fold = Callable[[Node, _Scope], np.ndarray | None]
"""The constant value that replaces a node's one output, or None to keep the node."""


def fold_scalar_dequantize(model: Model, report: PassReport) -> Model:
    """Return `model` with each DequantizeLinear of a one-element 8/16-bit constant, whose
    readers are all element-wise ops, replaced by its float value; `model` itself when none
    is."""
    return _fold(model, report, _dequantized_scalar, "a dequantized scalar constant")


def fold_scalar_quantize(model: Model, report: PassReport) -> Model:
    """Return `model` with each QuantizeLinear of one-element constants read only as an
    operand (A or B) of com.microsoft QLinearAdd/QLinearMul replaced by its integer value;
    `model` itself when none is."""
    return _fold(model, report, _quantized_scalar, "a quantized scalar constant")


def _fold(model: Model, report: PassReport, fold: Fold, reason: str) -> Model:
    """Return `model` with each node that `fold` gives a value for replaced by that constant
    (its readers renamed to it; recorded folded with `reason`); `model` itself when none."""
    graph = model.graph
    scope = _Scope(constants_of(graph), graph.consumers(), graph.producers(),
                   dict(model.opsets), {info.name for info in graph.outputs})
    namer, added, alias = Namer(graph), [], {}
    for node in graph.nodes:
        value = fold(node, scope)
        if value is None:
            continue
        name = namer(f"{node.outputs[0]}_value")
        added.append(tensor(name, value))
        alias[node.outputs[0]] = name
        report.record(node.label, FOLDED, reason=reason)
    if not alias:
        return model
    nodes = [rename_inputs(node, alias) for node in graph.nodes]
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def _dequantized_scalar(node: Node, scope: _Scope) -> np.ndarray | None:
    """The float value of a DequantizeLinear of a one-element 8/16-bit constant read only by
    element-wise ops; else None."""
    if node.op_type != "DequantizeLinear" or node.domain != "":
        return None
    readers = scope.consumers.get(node.outputs[0], [])
    if (not readers or node.outputs[0] in scope.outputs
            or any(r.op_type not in ELEMENTWISE or r.domain != "" for r in readers)):
        return None
    constants = scope.constants
    x = _scalar_integer(node.inputs[0], constants, scope.producers, scope.opsets)
    if (x is None or DataType.from_numpy(x.dtype) not in _EIGHT_OR_SIXTEEN_BIT
            or any(name and name not in constants for name in node.inputs[1:])):
        return None
    op = make_op(node, scope.opsets)
    (value,) = op.run([x, *(constants[n] if n else None for n in node.inputs[1:])])
    return value


def _quantized_scalar(node: Node, scope: _Scope) -> np.ndarray | None:
    """The integer value of a QuantizeLinear of one-element constants read only as an
    operand of QLinearAdd/QLinearMul; else None."""
    if node.op_type != "QuantizeLinear" or node.domain != "" or node.outputs[0] in scope.outputs:
        return None
    readers = scope.consumers.get(node.outputs[0], [])
    if not readers or any(r.op_type not in _QLINEAR_PAIRS or r.domain != "com.microsoft"
                          or node.outputs[0] not in (r.inputs[0], r.inputs[3])
                          for r in readers):
        return None
    return _scalar_integer(node.outputs[0], scope.constants, scope.producers, scope.opsets)


def _scalar_integer(name: str, constants: Mapping[str, np.ndarray],
                    producers: Mapping[str, Node], opsets: dict[str, int]) -> np.ndarray | None:
    """The value of `name` when it holds one element and is a constant or the QuantizeLinear
    of constants (a Constant node's value quantized by onnxruntime); else None."""
    if name in constants:
        value = constants[name]
        return value if value.size == 1 else None
    source = producers.get(name)
    if (source is None or source.op_type != "QuantizeLinear" or source.domain != ""
            or any(n and n not in constants for n in source.inputs)
            or constants[source.inputs[0]].size != 1):
        return None
    (value,) = make_op(source, opsets).run([constants[n] if n else None for n in source.inputs])
    return value
