"""Fold an Add (or Sub) of a per-channel constant into the Conv in front of it (float).

Exporters that write a convolution's bias as its own node (paddle2onnx: Conv then Add of a
[1, M, 1, 1] constant; squeeze-excitation blocks alike) leave the accelerator an Add that
has no quantized form of its own. With z = conv(x, W) + b and a constant c that varies at
most along the output channel axis,

    z + c = conv(x, W, b + c)        z - c = conv(x, W, b - c)

exactly in real arithmetic; b + c is computed in float64 and stored in W's type (one
rounding, as a bias the exporter had written into the Conv would have had).

Preconditions: the Conv is ai.onnx with constant W (and B when given) of a float type; the
other operand of the Add/Sub is a constant of the same type whose shape broadcasts only
along axis 1 of the convolution's output (M or 1 there, 1 elsewhere, rank at most the
output's); the Add's result has the convolution's shape (the constant does not broadcast
it up); the convolution's output has no other reader and is not a graph output. For Sub
the convolution is the first operand. Otherwise nothing changes.
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    replace_graph,
    splice,
    tensor,
    with_graph,
)
from systolic.mapper.passes.report import FUSED, PassReport

__all__ = ["fold_bias_add"]


def fold_bias_add(model: Model, report: PassReport) -> Model:
    """Return `model` with every foldable per-channel Add/Sub merged into its Conv's bias."""
    graph = model.graph
    constants = constants_of(graph)
    producers = graph.producers()
    consumers = graph.consumers()
    outputs = {info.name for info in graph.outputs}
    namer = Namer(graph)
    replaced: dict[int, list[Node]] = {}  # id(Conv) -> [the Conv with the folded bias]
    removed: set[int] = set()
    new_constants: list[Tensor] = []
    for add in graph.nodes:
        match = _match(graph, add, producers, constants)
        if match is None:
            continue
        conv, offset = match
        if id(conv) in replaced or len(consumers.get(conv.outputs[0], [])) != 1 \
                or conv.outputs[0] in outputs:
            continue
        folded, bias = _fold(conv, offset, constants, namer)
        replaced[id(conv)] = [dataclasses.replace(folded, outputs=(add.outputs[0],))]
        removed.add(id(add))
        new_constants.append(bias)
        report.record(add.label, FUSED, into=f"the bias of Conv {conv.label!r} (float)")
    if not removed:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, replaced, removed),
                                           new_constants))


def _match(
    graph: Graph, add: Node, producers: dict[str, Node], constants: dict[str, np.ndarray]
) -> tuple[Node, np.ndarray] | None:
    """Return (the Conv, the per-channel offset to add, float64 [M]) when `add` folds."""
    if add.op_type not in ("Add", "Sub") or add.domain != "" or len(add.inputs) != 2:
        return None
    operands = [add.inputs] if add.op_type == "Sub" else [add.inputs, add.inputs[::-1]]
    for produced, constant in operands:
        conv = producers.get(produced)
        if conv is None or constant not in constants or not _is_float_conv(conv, constants):
            continue
        offset = _channel_offset(graph, conv, add, constants[constant])
        if offset is not None:
            return conv, -offset if add.op_type == "Sub" else offset
    return None


def _is_float_conv(conv: Node, constants: dict[str, np.ndarray]) -> bool:
    if conv.op_type != "Conv" or conv.domain != "" or len(conv.inputs) < 2:
        return False
    weights = constants.get(conv.inputs[1])
    bias_name = conv.inputs[2] if len(conv.inputs) > 2 else ""
    return (weights is not None and weights.dtype.kind == "f"
            and (not bias_name or bias_name in constants))


def _channel_offset(
    graph: Graph, conv: Node, add: Node, value: np.ndarray
) -> np.ndarray | None:
    """Return `value` as a float64 [M] offset per output channel, or None when it varies
    along another axis, broadcasts the output up, or has another element type."""
    conv_type, add_type = graph.type_of(conv.outputs[0]), graph.type_of(add.outputs[0])
    if conv_type is None or add_type is None or conv_type.shape is None:
        return None
    shape = conv_type.shape
    if add_type.shape != shape or len(shape) < 3 or not isinstance(shape[1], int):
        return None
    if value.dtype != conv_type.dtype.numpy or value.ndim > len(shape):
        return None
    aligned = (1,) * (len(shape) - value.ndim) + value.shape
    channels = shape[1]
    if aligned[1] not in (1, channels) or any(d != 1 for i, d in enumerate(aligned) if i != 1):
        return None
    return np.broadcast_to(value.astype(np.float64).reshape(-1), (channels,)).copy()


def _fold(
    conv: Node, offset: np.ndarray, constants: dict[str, np.ndarray], namer: Namer
) -> tuple[Node, Tensor]:
    """Return the Conv with bias b + offset (b = 0 without one) and that bias tensor."""
    dtype = constants[conv.inputs[1]].dtype
    bias_name = conv.inputs[2] if len(conv.inputs) > 2 else ""
    old = constants[bias_name].astype(np.float64).reshape(-1) if bias_name else 0.0
    name = namer(f"{conv.label}_folded_bias")
    bias = tensor(name, (old + offset).astype(dtype))
    return dataclasses.replace(conv, inputs=(conv.inputs[0], conv.inputs[1], name)), bias
