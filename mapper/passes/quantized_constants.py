"""A DequantizeLinear (or QOperator QLinearMul/QLinearAdd) whose integer input is known before
running reads that value as a constant.

onnxruntime's static QDQ quantizer quantizes a rotary position embedding's cos/sin tables
like activations: the exporter computes them from constants (inverse frequencies times the
positions, Cos, Sin, a scaling Mul) and the quantizer puts a QuantizeLinear/DequantizeLinear
pair after each step (Mul -> Q -> DQ -> Cast -> Unsqueeze -> Q -> DQ). `fold_constants`
never folds Q/DQ (they mark the quantization), so the table stayed a computed tensor beside
the queries, which the Mul broadcast over the heads, on the host. Here the integer input u of
each such DequantizeLinear D, when every value it depends on is a constant (through any
ai.onnx or com.microsoft operators, Q/DQ included), is computed with the reference operators
(what the executor computes when running) and D reads it as an 8-bit constant: D(constant) takes
its operand's shape (`expand_constant_operand`) and the product becomes a QMul. The QOperator
form (QuantizeLinear of the table read by com.microsoft QLinearMul) is folded alike; there
`normalize_qoperator` expands the constant.

Only u of 8-bit integers of at most `MAX_ELEMENTS` elements is folded; the nodes that made it
are left to `eliminate_dead`. The result is exact.
"""

import dataclasses
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
from systolic.reference.executor import make_op

__all__ = ["MAX_ELEMENTS", "fold_quantized_constants"]

MAX_ELEMENTS = 1 << 20
"""The most elements of a folded integer value."""

_DOMAINS = frozenset({"", "com.microsoft"})
"""The operators evaluated: ai.onnx's and onnxruntime's QOperator ones (QLinearMul ...)."""

_NOT_EVALUATED = frozenset({"If", "Loop", "Scan", "RandomNormal", "RandomUniform",
                            "RandomNormalLike", "RandomUniformLike", "Multinomial"})


class _Values:
    """The values computable from the graph's constants, computed on demand (memoised)."""

    def __init__(self, model: Model) -> None:
        self.known: dict[str, np.ndarray | None] = dict(constants_of(model.graph))
        self.producers = model.graph.producers()
        self.opsets = dict(model.opsets)

    def of(self, name: str, depth: int = 0) -> np.ndarray | None:
        """The value of `name` when every value it depends on is a constant, else None."""
        if name in self.known:
            return self.known[name]
        self.known[name] = None  # also guards against cycles
        node = self.producers.get(name)
        if (node is None or depth > 64 or node.domain not in _DOMAINS
                or node.op_type in _NOT_EVALUATED):
            return None
        inputs = [self.of(i, depth + 1) if i else None for i in node.inputs]
        if any(v is None for i, v in zip(node.inputs, inputs, strict=True) if i):
            return None
        results = make_op(node, self.opsets).run(inputs)
        for out, value in zip(node.outputs, results, strict=False):
            if out:
                self.known[out] = np.asarray(value)
        return self.known[name]


_INTEGER_INPUTS = {("", "DequantizeLinear"): (0,), ("com.microsoft", "QLinearMul"): (0, 3),
                   ("com.microsoft", "QLinearAdd"): (0, 3)}
"""The 8-bit inputs (by index) folded, by operator: a DequantizeLinear's, and the operands of
onnxruntime's QOperator element-wise ops (its QOperator form of the same rotary tables)."""


def _folded_inputs(node: Node, values: _Values, constants: Mapping[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:  # fmt: skip
    """The 8-bit values of `node`'s computed integer inputs (`_INTEGER_INPUTS`) known before
    running, by input name."""
    found = {}
    for index in _INTEGER_INPUTS.get((node.domain, node.op_type), ()):
        name = node.inputs[index] if index < len(node.inputs) else ""
        if not name or name in constants:
            continue
        value = values.of(name)
        if (value is not None and value.dtype in (np.int8, np.uint8)
                and value.size <= MAX_ELEMENTS):
            found[name] = value
    return found


def fold_quantized_constants(model: Model, report: PassReport) -> Model:
    """Return `model` with each such node (module docstring) reading its inputs' values as
    constants; `model` itself when there is none. `report` is not written (D is
    fused, or not, later; the nodes left unread are eliminated as dead)."""
    graph = model.graph
    constants, values, namer = constants_of(graph), _Values(model), Namer(graph)
    added: list[Tensor] = []
    nodes: list[Node] = []
    for node in graph.nodes:
        renamed = {}
        for old, value in _folded_inputs(node, values, constants).items():
            renamed[old] = namer(f"{old}_value")
            added.append(tensor(renamed[old], value))
        nodes.append(rename_inputs(node, renamed) if renamed else node)
    if not added:
        return model
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))
