"""A DequantizeLinear whose integer input is known before running reads that value as a
constant.

onnxruntime's static QDQ quantizer quantizes a rotary position embedding's cos/sin tables
like activations: the exporter computes them from constants (inverse frequencies times the
positions, Cos, Sin, a scaling Mul) and the quantizer puts a QuantizeLinear/DequantizeLinear
pair after each step (Mul -> Q -> DQ -> Cast -> Unsqueeze -> Q -> DQ). `fold_constants`
never folds Q/DQ (they mark the quantization), so the table stayed a computed tensor beside
the queries, which the Mul broadcast over the heads, on the host. Here the integer input u of
each such DequantizeLinear D, when every value it depends on is a constant (through any
ai.onnx operators, Q/DQ included), is computed with the reference operators (what the
executor computes when running) and D reads it as an 8-bit constant: D(constant) then takes
its operand's shape (`expand_constant_operand`) and the product becomes a QMul.

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
        if (node is None or depth > 64 or node.domain != ""
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


def _foldable(node: Node, values: _Values, constants: Mapping[str, np.ndarray]
              ) -> np.ndarray | None:  # fmt: skip
    """The 8-bit value of DequantizeLinear `node`'s computed integer input, else None."""
    if node.op_type != "DequantizeLinear" or node.domain != "" or node.inputs[0] in constants:
        return None
    value = values.of(node.inputs[0])
    if value is None or value.dtype not in (np.int8, np.uint8) or value.size > MAX_ELEMENTS:
        return None
    return value


def fold_quantized_constants(model: Model, report: PassReport) -> Model:
    """Return `model` with each such DequantizeLinear (module docstring) reading its input's
    value as a constant; `model` itself when there is none. `report` is not written (D is
    fused, or not, later; the nodes left unread are eliminated as dead)."""
    graph = model.graph
    constants, values, namer = constants_of(graph), _Values(model), Namer(graph)
    added: list[Tensor] = []
    nodes: list[Node] = []
    for node in graph.nodes:
        value = _foldable(node, values, constants)
        if value is not None:
            name = namer(f"{node.inputs[0]}_value")
            added.append(tensor(name, value))
            node = rename_inputs(node, {node.inputs[0]: name})
        nodes.append(node)
    if not added:
        return model
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))
