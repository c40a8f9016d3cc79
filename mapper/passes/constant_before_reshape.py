"""Float models, before post-training quantization: an Add or Mul of a float constant whose
other operand is a Reshape to a rank the vector unit does not take (above `MAX_RANK`) is done
before that Reshape, on the Reshape's input, with the constant reshaped like it.

Swin's shifted-window attention adds its mask [1, nW, 1, N, N] to the scores viewed as
[B, nW, heads, N, N] (a Reshape of [B * nW, heads, N, N]) and views the sum back for the
Softmax. The quantized sum of a rank-5 tensor and a rank-5 constant stays float on the host.
An element-wise op does not care how its operands' elements are grouped into axes, so

    Op(Reshape(x, s), C) = Reshape(Op(x, C'), s),   C' = broadcast_to(C, s).reshape(shape(x))

exactly (the same float operation on the same pairs of elements), when the op's result has
the Reshape's shape s (C broadcasts to it) and C' has at most `MAX_CONSTANT_BYTES`. The sum
then has x's rank (a QAdd of a whole-shape constant once quantized), and a Reshape with a
constant shape free of 0 entries that reads the result reads the new sum directly
(Reshape(Reshape(y, s), t) = Reshape(y, t)), so the rank-5 view is left unread when every
reader is such a Reshape (removed by `eliminate_dead`).
"""

import dataclasses
import math

import numpy as np

from systolic.ir import DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    rename_inputs,
    replace_graph,
    splice,
    tensor,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["MAX_CONSTANT_BYTES", "MAX_RANK", "constant_before_reshape"]

MAX_RANK = 4
"""The highest rank the element-wise fusions take a whole-shape constant operand at."""

MAX_CONSTANT_BYTES = 1 << 20
"""The most bytes the reshaped constant C' may hold (a larger op stays as it is)."""

_OPS = frozenset({"Add", "Mul"})


def _static(graph: Graph, name: str) -> tuple[int, ...] | None:
    """The static shape of float value `name`, else None."""
    found = graph.type_of(name)
    if found is None or found.shape is None or not found.is_static or found.dtype != DataType.FLOAT:
        return None
    return tuple(int(d) for d in found.shape)  # type: ignore[arg-type]


def _moved_constant(graph: Graph, node: Node, producer: Node | None,
                    constant: np.ndarray) -> np.ndarray | None:
    """C' for `node` (module docstring) when `producer` is a Reshape it may move before, else
    None."""
    if producer is None or producer.op_type != "Reshape" or producer.domain != "":
        return None
    viewed = _static(graph, producer.outputs[0])
    source = _static(graph, producer.inputs[0])
    result = _static(graph, node.outputs[0])
    if viewed is None or source is None or result != viewed:
        return None
    if len(viewed) <= MAX_RANK or len(source) > MAX_RANK or constant.dtype != np.float32:
        return None
    if math.prod(source) * constant.itemsize > MAX_CONSTANT_BYTES:
        return None
    try:
        full = np.broadcast_to(constant, viewed)
    except ValueError:
        return None
    return np.ascontiguousarray(full).reshape(source)


def _direct_reshape(node: Node, constants: dict[str, np.ndarray]) -> bool:
    """True for a Reshape whose shape is a constant without 0 entries (so it means the same
    whatever shape its input has, given the element count)."""
    if node.op_type != "Reshape" or node.domain != "" or len(node.inputs) < 2:
        return False
    shape = constants.get(node.inputs[1])
    return shape is not None and not bool((shape == 0).any())


def constant_before_reshape(model: Model, report: PassReport) -> Model:
    """Return `model` with each such op (module docstring) done before its Reshape; `model`
    itself when there is none. The op keeps its name (the report follows it); the Reshape
    after it is new. `report` is not written."""
    graph = model.graph
    constants, producers, consumers = constants_of(graph), graph.producers(), graph.consumers()
    outputs = {info.name for info in graph.outputs}
    namer, added = Namer(graph), []
    replaced: dict[int, list[Node]] = {}
    redirect: dict[int, dict[str, str]] = {}
    for node in graph.nodes:
        if node.op_type not in _OPS or node.domain != "" or len(node.inputs) != 2:
            continue
        fixed = [i for i, name in enumerate(node.inputs) if name in constants]
        if len(fixed) != 1:
            continue
        index = fixed[0]
        operand = node.inputs[1 - index]
        moved = _moved_constant(graph, node, producers.get(operand), constants[node.inputs[index]])
        if moved is None:
            continue
        view = producers[operand]
        nodes, new, total = _rewritten(node, view, index, moved, namer)
        replaced[id(node)] = nodes
        added.extend(new)
        if node.outputs[0] not in outputs:
            for reader in consumers.get(node.outputs[0], []):
                if _direct_reshape(reader, constants):
                    redirect.setdefault(id(reader), {})[node.outputs[0]] = total
    if not replaced:
        return model
    nodes = [rename_inputs(n, redirect[id(n)]) if id(n) in redirect else n
             for n in splice(graph.nodes, replaced, set())]
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def _rewritten(node: Node, view: Node, index: int, moved: np.ndarray, namer: Namer
               ) -> tuple[list[Node], list[Tensor], str]:  # fmt: skip
    """`node` on the Reshape `view`'s input with the constant `moved` (at input `index`),
    then a Reshape of its result to `node`'s output name; the constants they read, and the
    name of the result before that Reshape."""
    base = node.name or node.outputs[0]
    constant, total = namer(f"{node.inputs[index]}_unviewed"), namer(f"{base}_unviewed")
    inputs = list(node.inputs)
    inputs[index], inputs[1 - index] = constant, view.inputs[0]
    moved_op = dataclasses.replace(node, inputs=tuple(inputs), outputs=(total,))
    reshape = make_node("Reshape", [total, view.inputs[1]], [node.outputs[0]],
                        name=namer(f"{base}_view"))
    return [moved_op, reshape], [tensor(constant, moved)], total
