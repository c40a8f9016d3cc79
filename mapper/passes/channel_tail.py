"""The per-output-channel float ops that follow a convolution and can join it.

After z = conv(x, W) + b, a chain of sole readers

    Add/Sub of a constant c that varies at most along the channel axis:  z ± c
    BatchNormalization (inference, constant parameters):                  s·z + t
    Relu (last)

is z' = conv(x, W·a) + (b·a + o) (a, o per output channel, float64), then Relu when one
ends the chain. `conv_transpose` applies it before splitting a transposed convolution into
phases (the interleave after the phases would otherwise keep the chain away from
fold_bias_add and fold_batchnorm, and the Relu away from the phases' quantization).
"""

import dataclasses

import numpy as np

from systolic.ir import Graph, Node
from systolic.mapper.passes.graph_tools import attr_float

__all__ = ["ChannelTail", "channel_tail"]


@dataclasses.dataclass(frozen=True)
class ChannelTail:
    """z' = z·scale + offset per channel, then Relu if `relu`; `nodes` the ops absorbed and
    `output` the value the last one wrote."""

    scale: np.ndarray
    offset: np.ndarray
    relu: bool
    nodes: tuple[Node, ...]
    output: str


def channel_tail(graph: Graph, value: str, channels: int,
                 constants: dict[str, np.ndarray]) -> ChannelTail:  # fmt: skip
    """Return the per-channel chain that reads `value` (a float [N, channels, ...] map)."""
    consumers = graph.consumers()
    outputs = {info.name for info in graph.outputs}
    scale, offset = np.ones(channels), np.zeros(channels)
    nodes: list[Node] = []
    relu = False
    while not relu:
        readers = consumers.get(value, [])
        if len(readers) != 1 or value in outputs or readers[0].domain != "":
            break
        reader = readers[0]
        step = _affine(graph, reader, value, channels, constants)
        if step is not None:
            scale, offset = scale * step[0], offset * step[0] + step[1]
        elif reader.op_type == "Relu":
            relu = True
        else:
            break
        nodes.append(reader)
        value = reader.outputs[0]
    return ChannelTail(scale, offset, relu, tuple(nodes), value)


def _affine(graph: Graph, node: Node, value: str, channels: int,
            constants: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """Return (a, o) with node(z) = a·z + o per channel, or None."""
    rank = _rank(graph, value)
    if node.op_type in ("Add", "Sub") and len(node.inputs) == 2 and rank is not None:
        other = node.inputs[1] if node.inputs[0] == value else node.inputs[0]
        if other not in constants or (node.op_type == "Sub" and node.inputs[0] != value):
            return None
        offset = _per_channel(constants[other], rank, channels)
        if offset is None or graph.type_of(node.outputs[0]) != graph.type_of(value):
            return None
        return np.ones(channels), -offset if node.op_type == "Sub" else offset
    if node.op_type == "BatchNormalization" and len([o for o in node.outputs if o]) == 1:
        if any(name not in constants for name in node.inputs[1:5]):
            return None
        gamma, beta, mean, var = (constants[n].astype(np.float64).reshape(-1)
                                  for n in node.inputs[1:5])
        scale = gamma / np.sqrt(var + attr_float(node, "epsilon", 1e-5))
        return scale, beta - mean * scale
    return None


def _per_channel(value: np.ndarray, rank: int, channels: int) -> np.ndarray | None:
    if value.dtype.kind != "f" or value.ndim > rank:
        return None
    aligned = (1,) * (rank - value.ndim) + value.shape
    if aligned[1] not in (1, channels) or any(d != 1 for i, d in enumerate(aligned) if i != 1):
        return None
    return np.broadcast_to(value.astype(np.float64).reshape(-1), (channels,)).copy()


def _rank(graph: Graph, value: str) -> int | None:
    found = graph.type_of(value)
    return len(found.shape) if found is not None and found.shape is not None else None
