"""Widen a float16 model to float32, so that it is quantized and mapped like any float model.

Exporters write half-precision models (`convert_float_to_float16`, `model.half()` before
export): float16 weights, activations and often float16 graph inputs and outputs. The
quantizer and the fusions work on float32 values, so such a model stayed on the host whole.

The algebra: float16 -> float32 is exact (every half value is a single value), so a widened
constant equals the original; each operator then computes in float32 instead of rounding its
result to float16 (the only difference, far below the 8-bit quantization that follows).

The rewrite: float16 initializers and the float16 tensors of Constant and ConstantOfShape
become float32; a Cast to float16 casts to float32; a float16 graph input is read through a
new Cast to float32, and a float16 graph output is written by a new Cast from the float32
value (the model keeps its interface: the user feeds and receives float16). Types are
inferred again afterwards (`finalize`).

Preconditions: some value is float16, and no node holds a subgraph (an If, Loop or Scan left
after `fold_if` would keep float16 inside its branches while its readers widen): otherwise
the model is returned unchanged.
"""

import dataclasses

from systolic.ir import Attrs, DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import Namer, make_node, rename_inputs, tensor
from systolic.mapper.passes.report import PassReport

__all__ = ["CAST_REASON", "widen_float16"]

CAST_REASON = ("converts between the float16 interface of the model and the float32 it is "
               "computed in (widened exactly before quantization)")

_CONSTANT_OPS = frozenset({"Constant", "ConstantOfShape"})


def widen_float16(model: Model, report: PassReport) -> Model:
    """Return `model` computing in float32 where it computed in float16 (module docstring);
    `model` itself when it has no float16 value or holds a subgraph."""
    graph = model.graph
    if not _has_float16(graph) or any(_has_subgraph(node) for node in graph.nodes):
        return model
    namer = Namer(graph)
    entries = _input_casts(graph, namer)
    exits = _output_casts(graph, namer)
    renamed_outputs = {output: widened for output, widened, _ in exits}
    nodes = [_widened_node(node, {name: wide for name, wide, _ in entries}, renamed_outputs)
             for node in graph.nodes]
    new_nodes = [cast for _, _, cast in entries] + nodes + [cast for _, _, cast in exits]
    for _, _, cast in (*entries, *exits):
        report.created(cast.name, CAST_REASON)
    initializers = tuple(_widened_tensor(t) for t in graph.initializers)
    return dataclasses.replace(model, graph=dataclasses.replace(
        graph, nodes=tuple(new_nodes), initializers=initializers, value_info=()))


def _has_float16(graph: Graph) -> bool:
    infos = (*graph.inputs, *graph.outputs, *graph.value_info)
    return (any(info.type.dtype == DataType.FLOAT16 for info in infos)
            or any(t.dtype == DataType.FLOAT16 for t in graph.initializers)
            or any(_casts_to_float16(node) for node in graph.nodes))


def _has_subgraph(node: Node) -> bool:
    return any(isinstance(value, Graph) or (isinstance(value, tuple) and value
                                            and isinstance(value[0], Graph))
               for value in node.attrs.values())


def _casts_to_float16(node: Node) -> bool:
    return node.op_type == "Cast" and node.domain == "" and \
        node.attrs.get("to") == int(DataType.FLOAT16)


def _input_casts(graph: Graph, namer: Namer) -> list[tuple[str, str, Node]]:
    """(input, its float32 name, the Cast making it) per float16 graph input."""
    constants = {t.name for t in graph.initializers}
    casts = []
    for info in graph.inputs:
        if info.type.dtype == DataType.FLOAT16 and info.name not in constants:
            wide = namer(f"{info.name}_float32")
            casts.append((info.name, wide, make_node(
                "Cast", [info.name], [wide], name=namer(f"{info.name}_to_float32"),
                attrs={"to": int(DataType.FLOAT)})))
    return casts


def _output_casts(graph: Graph, namer: Namer) -> list[tuple[str, str, Node]]:
    """(output, the float32 value its producer now writes, the Cast to float16) per float16
    graph output that a node produces."""
    produced = {name for node in graph.nodes for name in node.outputs}
    casts = []
    for info in graph.outputs:
        if info.type.dtype == DataType.FLOAT16 and info.name in produced:
            wide = namer(f"{info.name}_float32")
            casts.append((info.name, wide, make_node(
                "Cast", [wide], [info.name], name=namer(f"{info.name}_to_float16"),
                attrs={"to": int(DataType.FLOAT16)})))
    return casts


def _widened_node(node: Node, inputs: dict[str, str], outputs: dict[str, str]) -> Node:
    """Return `node` reading the widened inputs, writing the renamed outputs, with its
    float16 constant tensors and Cast target widened."""
    node = rename_inputs(node, {**inputs, **outputs})
    if any(name in outputs for name in node.outputs):
        node = dataclasses.replace(node, outputs=tuple(outputs.get(n, n) for n in node.outputs))
    if _casts_to_float16(node):
        return dataclasses.replace(node, attrs=Attrs({**node.attrs, "to": int(DataType.FLOAT)}))
    if node.op_type in _CONSTANT_OPS and node.domain == "":
        attrs = {key: _widened_tensor(value) if isinstance(value, Tensor) else value
                 for key, value in node.attrs.items()}
        return dataclasses.replace(node, attrs=Attrs(attrs))
    return node


def _widened_tensor(constant: Tensor) -> Tensor:
    if constant.dtype != DataType.FLOAT16:
        return constant
    widened = tensor(constant.name, constant.data.astype("float32"))
    return widened
