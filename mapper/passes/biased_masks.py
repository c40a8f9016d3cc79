"""A position bias and a mask in one Where (T5's exports): Where(keep, A, low), A a finite
float tensor (the relative-position bias: a constant, or a dynamic export's dequantized
8-bit table), low the float type's lowest finite number (the mask, `finite_masks` makes
-inf that), added to the scores of every layer before a Softmax:

    Add(s, Where(keep, A, low))  ->  Add(Add(s, A), Where(keep, 0, low))

per reader Add, each with its own new Where of scalar branches (which `arithmetic_masks`
then makes arithmetic: a table once quantized). Kept positions compute s + A + 0 = s + A,
the same float; masked ones (s + A) + low and s + low, both exactly `low` while |s| and
|s + A| are below half of `low`'s unit in the last place (2^103 for float32, 2^1023 for
float64), so the rewrite is exact for any scores a model computes. The bias Add is then a
QAdd (of a whole-shape constant, or of two computed tensors), and the mask's own Where is read by one Add: its range is
cut where the Softmax's exp table underflows (`softmax_ranges`), instead of one operand
mixing a bias of a few units with -3.4e38 (a requantization multiplier of ~1e37: host).
"""

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from systolic.ir import DataType, Graph, Model, Node
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    replace_graph,
    scalar_constant,
    splice,
    tensor,
)
from systolic.mapper.passes.report import REMOVED, PassReport

__all__ = ["split_biased_masks"]


def _lowest_scalar(constants: Mapping[str, np.ndarray], name: str) -> np.ndarray | None:
    """The one-element float constant `name` when it holds its type's lowest finite value."""
    value = scalar_constant(constants, name)
    if value is None or value.dtype.kind != "f":
        return None
    return value if float(value.reshape(())) == float(np.finfo(value.dtype).min) else None


_VIEWS = frozenset({"Unsqueeze", "Squeeze", "Reshape", "Transpose", "Expand"})


def _finite_bias(graph: Graph, name: str, constants: Mapping[str, np.ndarray],
                 producers: Mapping[str, Node]) -> bool:
    """True when value `name` is finite everywhere: a constant of finite values, or a
    DequantizeLinear's result of a finite constant scale seen through layout ops (a dynamic
    export's 8-bit position-bias table)."""
    while name not in constants:
        node = producers.get(name)
        if node is None or node.domain != "":
            return False
        if node.op_type == "DequantizeLinear":
            scale = constants.get(node.inputs[1])
            return scale is not None and bool(np.isfinite(scale).all())
        if node.op_type not in _VIEWS:
            return False
        name = node.inputs[0]
    return bool(np.isfinite(constants[name]).all())


def _split(node: Node, graph: Graph, constants: Mapping[str, np.ndarray],
           consumers: Mapping[str, list[Node]], producers: Mapping[str, Node],
           ) -> tuple[np.ndarray, list[Node]] | None:
    """(low, reader Adds) when `node` is Where(keep, A, low) with A a finite float tensor
    (`_finite_bias`) of more than one element and of the result's static shape, every reader
    an Add of one other operand whose results only Softmaxes read; else None."""
    if node.op_type != "Where" or node.domain != "" or len(node.inputs) != 3:
        return None
    low = _lowest_scalar(constants, node.inputs[2])
    bias, result = graph.type_of(node.inputs[1]), graph.type_of(node.outputs[0])
    if (low is None or bias is None or result is None or bias.shape is None
            or not bias.is_static or bias.shape != result.shape
            or bias.dtype != DataType.from_numpy(low.dtype)
            or math.prod(bias.shape) <= 1  # type: ignore[arg-type]
            or not _finite_bias(graph, node.inputs[1], constants, producers)):
        return None
    readers = consumers.get(node.outputs[0], [])
    if not readers or node.outputs[0] in {info.name for info in graph.outputs}:
        return None
    for add in readers:
        if (add.op_type != "Add" or add.domain != "" or len(add.inputs) != 2
                or add.inputs[0] == add.inputs[1]):
            return None
        softmaxes = consumers.get(add.outputs[0], [])
        if not softmaxes or any(s.op_type != "Softmax" or s.domain != "" for s in softmaxes):
            return None
    return low, readers


def split_biased_masks(model: Model, report: PassReport) -> Model:
    """Return `model` with each biased mask (module docstring) split into its bias Add and a
    Where of scalar branches per reader; `model` itself when there is none. The Where is
    recorded removed; the reader Adds keep their names (the report follows them)."""
    graph = model.graph
    constants, consumers, producers = constants_of(graph), graph.consumers(), graph.producers()
    namer, added = Namer(graph), []
    replaced: dict[int, list[Node]] = {}
    removed: set[int] = set()
    for node in graph.nodes:
        found = _split(node, graph, constants, consumers, producers)
        if found is None:
            continue
        low, readers = found
        zero = namer(f"{node.name or node.outputs[0]}_zero")
        added.append(tensor(zero, np.zeros((), low.dtype)))
        for add in readers:
            replaced[id(add)] = _rewritten(add, node, zero, namer)
        removed.add(id(node))
        report.record(node.label, REMOVED, reason="a mask Where of a bias tensor split into "
                      "the bias added to the scores and a Where of two constants")
    if not replaced:
        return model
    nodes = splice(graph.nodes, replaced, removed)
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, added))


def _rewritten(add: Node, where: Node, zero: str, namer: Namer) -> list[Node]:
    """The nodes of Add(Add(scores, A), Where(keep, 0, low)) for reader `add` of `where`."""
    keep, bias, low = where.inputs
    scores = next(name for name in add.inputs if name != where.outputs[0])
    base = add.name or add.outputs[0]
    biased, mask = namer(f"{base}_biased"), namer(f"{base}_mask")
    return [make_node("Add", [scores, bias], [biased], name=namer(f"{base}_bias")),
            make_node("Where", [keep, zero, low], [mask], name=namer(f"{base}_where")),
            dataclasses.replace(add, inputs=(biased, mask))]
