"""The L2 norm of each channel over the spatial positions (ConvNeXtV2's global response
normalization, GRN: Gx = ||x||_2 over H, W, then Gx / mean over channels) as a pool:

    g = ReduceL2(x, spatial axes, keepdims=1)   ->   g = Sqrt(P * GlobalAveragePool(Mul(x, x)))

with P the number of positions. x is [N, C, H, W] (axes 2, 3), or [N, H, W, C] (axes 1, 2: the
channel-last tensor timm's and transformers' ConvNeXtV2 normalize), which a Transpose [0, 3, 1,
2] shows as [N, C, H, W] first (a view of the row-major [N, H, W, C]) and a Reshape to
[N, 1, 1, C] ends (the same element order: the spatial axes are 1s). Once quantized the squares
and Sqrt(P * m) are activation tables and the average a QAveragePool on the vector unit.

A ReduceMean over the channels of such a norm (the last axis of [N, 1, 1, C], or axis 1 of
[N, C, 1, 1]; GRN's mean(Gx)) whose result only broadcasts back over the norm (through
element-wise ops with one-element constants, GRN's + eps, into a binary op with the norm:
Gx / (mean + eps)) is computed already broadcast: MatMul by a [C, 1] constant of 1/C over its
[N, 1, 1, C] form, then MatMul by a [1, C] constant of ones (two QMatMuls on the array of C
weights each; one [C, C] matrix of 1/C would load C^2 weight bytes for one row), so the quotient
is of two tensors of one shape (`divide_computed`: a QTable and a QMul). A Transpose back to
[N, C, 1, 1] follows in the channel-first case.

In float the squares, the sum in another order and 1/P, 1/C instead of the divisions differ
from the original by float roundings. Only float models (a quantized one's ReduceL2 reads a
DequantizeLinear and is left to it); other axes, ranks or keepdims=0 stay.
"""

import dataclasses
import math

import numpy as np

from systolic.ir import DataType, Graph, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_int,
    attr_ints,
    constants_of,
    make_node,
    replace_graph,
    tensor,
)
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.mapper.passes.report import PassReport

__all__ = ["spatial_l2_to_pool"]

_BINARY = frozenset({"Add", "Sub", "Mul", "Div"})


def spatial_l2_to_pool(model: Model, report: PassReport) -> Model:
    """Return `model` with each spatial ReduceL2 (module docstring) as a pool of squares and
    the channel means of its result as MatMuls; `model` itself when there is none."""
    graph = model.graph
    if is_quantized(model):
        return model
    constants, consumers = constants_of(graph), graph.consumers()
    build = _Build(Namer(graph))
    nodes: list[Node] = []
    means: dict[int, Node] = {}
    for node in graph.nodes:
        if id(node) in means:
            nodes.extend(build.channel_mean(graph, means[id(node)]))
            report.note(node.label, "a mean over the channels of a per-channel norm: a "
                        "MatMul by 1/C")
            continue
        layout = _spatial_layout(graph, node, constants)
        if layout is None:
            nodes.append(node)
            continue
        nodes.extend(build.norm(graph, node, layout))
        report.note(node.label, "an L2 norm over the spatial positions: the square root of "
                    "a global average pool of squares")
        for reader in consumers.get(node.outputs[0], []):
            if (_channel_mean(graph, reader, node.outputs[0], constants, layout)
                    and _broadcast_back(graph, reader, node.outputs[0], constants, consumers)):
                means[id(reader)] = reader
    if not build.constants:
        return model
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, build.constants))


def _static_shape(graph: Graph, name: str) -> tuple[int, ...] | None:
    found = graph.type_of(name)
    if found is None or found.shape is None or not found.is_static:
        return None
    return tuple(int(d) for d in found.shape)  # type: ignore[arg-type]


def _axes(node: Node, constants: dict[str, np.ndarray], rank: int) -> tuple[int, ...] | None:
    """The node's reduction axes (attribute or opset-18 constant input), sorted, >= 0."""
    if len(node.inputs) > 1 and node.inputs[1]:
        value = constants.get(node.inputs[1])
        if value is None:
            return None
        axes: tuple[int, ...] | None = tuple(int(a) for a in value.reshape(-1))
    else:
        axes = attr_ints(node, "axes")
    if not axes or any(not -rank <= a < rank for a in axes):
        return None
    return tuple(sorted({a % rank for a in axes}))


def _spatial_layout(graph: Graph, node: Node, constants: dict[str, np.ndarray]) -> str | None:
    """"nchw" or "nhwc" for a float ReduceL2 with keepdims=1 over the spatial axes of a static
    rank-4 input, else None."""
    if node.op_type != "ReduceL2" or node.domain != "" or not attr_int(node, "keepdims", 1):
        return None
    found = graph.type_of(node.inputs[0])
    shape = _static_shape(graph, node.inputs[0])
    if found is None or found.dtype != DataType.FLOAT or shape is None or len(shape) != 4:
        return None
    layouts: dict[tuple[int, ...], str] = {(2, 3): "nchw", (1, 2): "nhwc"}
    return layouts.get(_axes(node, constants, 4) or ())


def _channel_mean(graph: Graph, node: Node, norm: str, constants: dict[str, np.ndarray],
                  layout: str) -> bool:
    """True for a ReduceMean (keepdims=1) of `norm` over its channel axis alone."""
    if node.op_type != "ReduceMean" or node.domain != "" or node.inputs[0] != norm:
        return False
    return attr_int(node, "keepdims", 1) == 1 and _axes(node, constants, 4) == (
        (3,) if layout == "nhwc" else (1,))


def _broadcast_back(graph: Graph, mean: Node, norm: str, constants: dict[str, np.ndarray],
                    consumers: dict[str, list[Node]]) -> bool:
    """True when every use of `mean`'s result is an element-wise binary op with a one-element
    constant (whose result is used the same way) or with `norm` itself, never a graph output:
    then the mean may have the norm's shape (every channel the same value)."""
    outputs = {info.name for info in graph.outputs}
    pending, seen = [mean.outputs[0]], set()
    while pending:
        value = pending.pop()
        if value in outputs or value in seen:
            return value not in outputs
        seen.add(value)
        for reader in consumers.get(value, []):
            if reader.domain != "" or reader.op_type not in _BINARY or len(reader.inputs) != 2:
                return False
            other = reader.inputs[1] if reader.inputs[0] == value else reader.inputs[0]
            if other in constants and constants[other].size == 1:
                pending.append(reader.outputs[0])
            elif other != norm:
                return False
    return True


class _Build:
    """Makes the replacement nodes and collects their constants."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.constants: list[Tensor] = []

    def _value(self, base: str, what: str) -> str:
        return self.namer(f"{base}_{what}")

    def _constant(self, base: str, what: str, value: np.ndarray) -> str:
        name = self._value(base, what)
        self.constants.append(tensor(name, value))
        return name

    def norm(self, graph: Graph, node: Node, layout: str) -> list[Node]:
        """Sqrt(P * GlobalAveragePool(x * x)), through [N, C, H, W] for "nhwc"."""
        x, base = node.inputs[0], node.name or node.outputs[0]
        shape = _static_shape(graph, x)
        assert shape is not None
        square = self._value(base, "squares")
        out = [make_node("Mul", [x, x], [square], name=self._value(base, "square"))]
        if layout == "nhwc":
            turned = self._value(base, "channels_first")
            out.append(make_node("Transpose", [square], [turned], attrs={"perm": (0, 3, 1, 2)},
                                 name=self._value(base, "transpose")))
            square = turned
        mean = self._value(base, "mean_square")
        out.append(make_node("GlobalAveragePool", [square], [mean], name=node.name))
        if layout == "nhwc":
            flat = self._value(base, "channels_last")
            target = self._constant(base, "shape", np.array([shape[0], 1, 1, shape[3]],
                                                            np.int64))
            out.append(make_node("Reshape", [mean, target], [flat],
                                 name=self._value(base, "reshape")))
            mean = flat
        positions = math.prod(shape[1:3] if layout == "nhwc" else shape[2:])
        count = self._constant(base, "positions", np.array(positions, np.float32))
        total = self._value(base, "sum_square")
        out += [make_node("Mul", [mean, count], [total], name=self._value(base, "sum")),
                make_node("Sqrt", [total], list(node.outputs), name=self._value(base, "sqrt"))]
        return out

    def channel_mean(self, graph: Graph, node: Node) -> list[Node]:
        """MatMul(MatMul(g [N, 1, 1, C], 1/C [C, 1]), ones [1, C]) (g [N, C, 1, 1] transposed
        first and the result after)."""
        g, base = node.inputs[0], node.name or node.outputs[0]
        shape = _static_shape(graph, g)
        assert shape is not None
        channels_last = shape[3] != 1 or shape[1] == 1
        channels = shape[3] if channels_last else shape[1]
        mean = self._constant(base, "weights", np.full((channels, 1), 1.0 / channels,
                                                       np.float32))
        ones = self._constant(base, "broadcast", np.ones((1, channels), np.float32))
        out: list[Node] = []
        if not channels_last:
            turned = self._value(base, "channels_last")
            out.append(make_node("Transpose", [g], [turned], attrs={"perm": (0, 2, 3, 1)},
                                 name=self._value(base, "transpose")))
            g = turned
        scalar, spread = self._value(base, "scalar"), self._value(base, "spread")
        out += [make_node("MatMul", [g, mean], [scalar], name=node.name),
                make_node("MatMul", [scalar, ones], [spread if not channels_last
                                                     else node.outputs[0]],
                          name=self._value(base, "spread"))]
        if not channels_last:
            out.append(make_node("Transpose", [spread], list(node.outputs),
                                 attrs={"perm": (0, 3, 1, 2)}, name=self._value(base, "back")))
        return out
