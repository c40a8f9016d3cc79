"""A model's convolution and GEMM layers as SCALE-Sim topology layers
(`systolic compare --scalesim-topology out.csv`).

Works on the integer graph (after the mapper passes), where every convolution is a
systolic.QConv and every matrix product (Gemm, MatMul, QGemm, ...) a systolic.QMatMul:

- QConv: one row per image of the batch and per group (SCALE-Sim has neither), named
  `NAME`, `NAME/g1`, `NAME/n1`, ... when there are several. SCALE-Sim has no padding, and 3.0
  computes an output size as ceil((ifmap − filter + stride) / stride), v2 as
  (ifmap − filter) // stride + 1: the IFMAP size written is the input our output O actually
  reads, (O − 1)·stride + filter, for which both give O (the padded size H + pads would give
  one row more in 3.0 whenever the stride does not divide H + pads − filter). So the output
  sizes and MACs are the model's. A 1-D convolution is a 2-D one of height 1.
- QMatMul A(..., K) · B(K, N): the GEMM of M = prod(A's leading dims), written as SCALE-Sim's
  1×1 convolution of an M×1 input with K channels and N filters.
- Refused (UnsupportedError naming the layer): different strides per axis and dilation > 1,
  which SCALE-Sim's format cannot state with the same MACs.
"""

import math
from collections.abc import Callable, Mapping

from systolic.compare.topology import TopologyLayer
from systolic.errors import ModelError, UnsupportedError
from systolic.ir import SYSTOLIC_DOMAIN, Graph, Model, Node
from systolic.mapper.binding import bind_graph
from systolic.mapper.lowering.node_attrs import int_attr, ints_attr
from systolic.mapper.shape_inference import infer_shapes

__all__ = ["model_topology", "read_extent"]



def _typed(model: Model) -> Graph:
    opsets: dict[str, int] = dict(model.opsets)
    opsets.setdefault(SYSTOLIC_DOMAIN, 1)
    bound, ops = bind_graph(model.graph, opsets)
    return infer_shapes(bound, ops, max_tensor_bytes=1 << 40)


def _shape(graph: Graph, name: str, node: Node) -> tuple[int, ...]:
    kind = graph.type_of(name)
    if kind is None or not kind.is_static or kind.shape is None:
        raise ModelError(f"layer {node.label!r}: value {name!r} has no static shape")
    return tuple(int(d) for d in kind.shape)  # type: ignore[arg-type]


def _conv_rows(graph: Graph, node: Node) -> list[TopologyLayer]:
    x = _shape(graph, node.inputs[0], node)
    w = _shape(graph, node.inputs[1], node)
    spatial = len(x) - 2
    if spatial not in (1, 2):
        raise UnsupportedError(f"layer {node.label!r}: only 1-D and 2-D convolutions have a "
                               f"SCALE-Sim row, not {spatial}-D")  # fmt: skip
    strides = ints_attr(node, "strides", (1,) * spatial)
    dilations = ints_attr(node, "dilations", (1,) * spatial)
    pads = ints_attr(node, "pads", (0,) * (2 * spatial))
    if len(set(strides)) != 1:
        raise UnsupportedError(
            f"layer {node.label!r} has strides {list(strides)}: SCALE-Sim topologies have one "
            f"stride for both axes; this model has no exact SCALE-Sim form"
        )
    if any(d != 1 for d in dilations):
        raise UnsupportedError(
            f"layer {node.label!r} has dilations {list(dilations)}: SCALE-Sim topologies have "
            f"no dilation; this model has no exact SCALE-Sim form"
        )
    group = int_attr(node, "group", 1)
    batch, channels = x[0], x[1]
    kernel = list(w[2:])
    sizes = [read_extent(x[2 + i] + pads[i] + pads[spatial + i], kernel[i], strides[0])
             for i in range(spatial)]  # fmt: skip
    if spatial == 1:
        sizes, kernel = [1, *sizes], [1, *kernel]
    rows = []
    for image in range(batch):
        for g in range(group):
            name = node.label
            if batch > 1:
                name += f"/n{image}"
            if group > 1:
                name += f"/g{g}"
            rows.append(TopologyLayer(name, sizes[0], sizes[1], kernel[0], kernel[1],
                                      channels // group, w[0] // group, strides[0]))  # fmt: skip
    return rows


def read_extent(padded: int, kernel: int, stride: int) -> int:
    """Return the input extent a convolution's outputs read, (O − 1)·stride + kernel with
    O = (padded − kernel) // stride + 1: the IFMAP size for which SCALE-Sim 3.0's
    ceil((ifmap − kernel + stride) / stride) and v2's floor form both give O."""
    return (padded - kernel) // stride * stride + kernel


def _gemm_row(graph: Graph, node: Node) -> TopologyLayer:
    a = _shape(graph, node.inputs[0], node)
    b = _shape(graph, node.inputs[1], node)
    return TopologyLayer.gemm(node.label, math.prod(a[:-1]), b[-1], a[-1])


def _gemm_rows(graph: Graph, node: Node) -> list[TopologyLayer]:
    return [_gemm_row(graph, node)]


_ROWS: Mapping[str, Callable[[Graph, Node], list[TopologyLayer]]] = {
    "QConv": _conv_rows,
    "QMatMul": _gemm_rows,
}


def model_topology(integer: Model) -> list[TopologyLayer]:
    """Return the SCALE-Sim rows of the integer graph's QConv and QMatMul layers, in order
    (module docstring)."""
    graph = _typed(integer)
    rows: list[TopologyLayer] = []
    for node in graph.nodes:
        if node.domain == SYSTOLIC_DOMAIN and node.op_type in _ROWS:
            rows += _ROWS[node.op_type](graph, node)
    return rows
