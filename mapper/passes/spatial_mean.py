"""ReduceMean over all spatial axes becomes GlobalAveragePool, so it can run on the vector unit;
GlobalMaxPool of a static shape becomes the MaxPool whose window is the whole spatial extent.

Networks exported from PyTorch often end with `x.mean((2, 3))` instead of an adaptive
average pool: a ReduceMean whose axes are exactly the spatial axes 2 .. rank-1 of a float
input of rank >= 3. That is GlobalAveragePool (`keepdims=1`), or GlobalAveragePool followed
by a Reshape to [N, C] (`keepdims=0`). With the pool in its place, post-training quantization
and QDQ fusion treat it like any global average pool (a systolic.QAveragePool).

In a QDQ model the ReduceMean of `keepdims=0` is usually read by one QuantizeLinear; then the
QuantizeLinear moves in front of the Reshape (quantization is elementwise, so
Q(Reshape(v)) = Reshape(Q(v)) exactly) and the Reshape works on the integers: the
DQ -> GlobalAveragePool -> Q pattern is left for `fuse_qdq`, and the integer Reshape is a
layout op. Axes given as an input (opset 18) must be a constant; anything else (other axes,
an unknown rank, integer data) stays a ReduceMean (on the host).

A normalization statistic is not a pool. For rank 3 the reduced axis 2 is also the last one,
and [B, S, H] sequence tensors (transformers) put their hidden size there: a decomposed
LayerNorm's `mean(x, -1)` and `mean((x - mu)^2, -1)` are ReduceMeans over axis 2 of a rank-3
tensor, and rewriting them as pools would make the memory plan store the residual stream
channel-last (pool operands are [N, C, L] values) so the matmuls that write it leave the array.
The rule that tells them apart: a rank-3 mean stays a ReduceMean when it is a statistic that is
broadcast back over the axis it reduced, that is when its result reaches, through elementwise
ops only (Add, Sub, Mul, Div, Pow, Sqrt, Reciprocal, Cast, Identity, Q/DQ), a binary
elementwise op whose other operand has rank >= 3 and the reduced axis' length (> 1) as its
last dimension (`x - mean(x)`, `xc / sqrt(var + eps)`). That is what normalizations (LayerNorm,
an instance norm over L) do with their means, and no pooling head does: a Conv1d net's mean
over L feeds a Flatten/Gemm/Conv (a squeeze-excitation's broadcast Mul is reached only through
a Conv, which ends the walk), so it is still converted. Keeping a mean does not change a
value, only where it runs; ranks >= 4 are [N, C, *spatial] by convention and are not checked.

A token mean (LeViT's and other vision transformers' `x.mean(1)` pooling head): ReduceMean over
axis 1 of a rank-3 [N, S, C] float tensor with `keepdims=0`, the result [N, C]. That is the
global average pool of Transpose(x, [0, 2, 1]) ([N, C, S]: the same memory as a row-major
[N, S, C], a view) followed by the Reshape to [N, C] as above. When x is a per-tensor
DequantizeLinear's result, the Transpose moves before it (DQ(Transpose(u)): exact, the
integers move) so that DQ -> GlobalAveragePool -> Q fuses.
"""

import dataclasses

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
from systolic.mapper.passes.report import PassReport

__all__ = ["spatial_mean_to_pool"]

_FLOAT_TYPES = frozenset({DataType.FLOAT, DataType.FLOAT16, DataType.DOUBLE})
_ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Cast",
                          "Identity", "QuantizeLinear", "DequantizeLinear"})
_BINARY = frozenset({"Add", "Sub", "Mul", "Div"})


def _spatial_rank(graph: Graph, node: Node, constants: dict[str, np.ndarray]) -> int | None:
    """Return the input's rank when `node` averages exactly over axes 2 .. rank-1, else None."""
    if node.op_type != "ReduceMean" or node.domain != "" or not node.inputs:
        return None
    info = graph.type_of(node.inputs[0])
    if info is None or info.shape is None or info.dtype not in _FLOAT_TYPES:
        return None
    rank = len(info.shape)
    if rank < 3:
        return None
    if len(node.inputs) > 1 and node.inputs[1]:
        axes_value = constants.get(node.inputs[1])
        if axes_value is None:
            return None
        axes: tuple[int, ...] | None = tuple(int(a) for a in axes_value.reshape(-1))
    else:
        axes = attr_ints(node, "axes")
    if not axes:  # no axes: every axis (or none at all with noop_with_empty_axes)
        return None
    if sorted({a % rank if -rank <= a < rank else -1 for a in axes}) != list(range(2, rank)):
        return None
    return rank


def _global_max_window(graph: Graph, node: Node) -> tuple[int, ...] | None:
    """Return the spatial shape of a GlobalMaxPool's static input (rank >= 3), else None."""
    if node.op_type != "GlobalMaxPool" or node.domain != "" or not node.inputs:
        return None
    info = graph.type_of(node.inputs[0])
    if info is None or info.shape is None or not info.is_static or len(info.shape) < 3:
        return None
    return tuple(int(d) for d in info.shape[2:] if isinstance(d, int))


def spatial_mean_to_pool(model: Model, report: PassReport) -> Model:
    """Return `model` with every spatial ReduceMean replaced as the module docstring says."""
    graph = model.graph
    constants = constants_of(graph)
    readers = graph.consumers()
    outputs = {info.name for info in graph.outputs}
    namer = Namer(graph)
    nodes: list[Node] = []
    new_constants: list[Tensor] = []
    moved_quantize: dict[str, Node] = {}  # QuantizeLinear label -> the Reshape that replaces it
    for node in graph.nodes:
        if node.label in moved_quantize:
            nodes.append(moved_quantize[node.label])
            continue
        window = _global_max_window(graph, node)
        if window is not None:
            nodes.append(make_node("MaxPool", node.inputs, node.outputs, name=node.name,
                                   attrs={"kernel_shape": window}))
            report.note(node.label, "a GlobalMaxPool: a max pool over the whole spatial extent")
            continue
        rank = _spatial_rank(graph, node, constants)
        if rank == 3 and _is_broadcast_back(graph, readers, node):
            report.note(node.label, "a ReduceMean over the last axis of a rank-3 tensor that is "
                                    "broadcast back over that axis: a normalization, not a pool")
            rank = None
        x, y, what = node.inputs[0], node.outputs[0], "the spatial axes"
        if rank is None and _is_token_mean(graph, node, constants):
            what = "the tokens (axis 1 of [N, S, C], transposed)"
            x, moved = _tokens_last(graph, node, constants, namer, new_constants)
            nodes.extend(moved)
            rank = 3
        if rank is None:
            nodes.append(node)
            continue
        pool = make_node("GlobalAveragePool", [x], [y], name=node.name)
        if attr_int(node, "keepdims", 1):
            nodes.append(pool)
            report.note(node.label, "a ReduceMean over the spatial axes: a global average pool")
            continue
        pooled = namer(f"{y}_pooled")
        shape_name = namer(f"{y}_shape")
        new_constants.append(tensor(shape_name, np.array([0, 0], dtype=np.int64)))
        nodes.append(dataclasses.replace(pool, outputs=(pooled,)))
        quantize = _sole_quantize_reader(readers.get(y, []), y, outputs)
        if quantize is None:
            nodes.append(make_node("Reshape", [pooled, shape_name], [y],
                                   name=namer(f"{node.name}_reshape")))
        else:
            q_out = namer(f"{quantize.outputs[0]}_pooled")
            nodes.append(dataclasses.replace(quantize, inputs=(pooled, *quantize.inputs[1:]),
                                             outputs=(q_out,)))
            moved_quantize[quantize.label] = make_node(
                "Reshape", [q_out, shape_name], [quantize.outputs[0]],
                name=namer(f"{node.name}_reshape"))
        report.note(node.label, f"a ReduceMean over {what}: a global average pool and a "
                                "Reshape")
    if len(nodes) == len(graph.nodes) and all(a is b for a, b in zip(nodes, graph.nodes)):
        return model  # nothing matched
    return dataclasses.replace(model, graph=replace_graph(graph, nodes, new_constants))


def _is_token_mean(graph: Graph, node: Node, constants: dict[str, np.ndarray]) -> bool:
    """True when `node` is a float ReduceMean over axis 1 of a rank-3 input, `keepdims=0`
    (module docstring: a token mean [N, S, C] -> [N, C])."""
    if node.op_type != "ReduceMean" or node.domain != "" or attr_int(node, "keepdims", 1):
        return False
    info = graph.type_of(node.inputs[0])
    if info is None or info.shape is None or info.dtype not in _FLOAT_TYPES or len(
            info.shape) != 3:
        return False
    if len(node.inputs) > 1 and node.inputs[1]:
        axes_value = constants.get(node.inputs[1])
        axes = None if axes_value is None else tuple(int(a) for a in axes_value.reshape(-1))
    else:
        axes = attr_ints(node, "axes")
    return axes in ((1,), (-2,))


def _tokens_last(graph: Graph, mean: Node, constants: dict[str, np.ndarray], namer: Namer,
                 new_constants: list[Tensor]) -> tuple[str, list[Node]]:
    """Return ([N, C, S] value, the nodes that make it) for a token mean's input [N, S, C]:
    Transpose(x, [0, 2, 1]), or DQ(Transpose(u)) when x = DQ(u) of one scale and zero point
    (new nodes: the original DQ may have other readers)."""
    x = mean.inputs[0]
    dq = graph.producers().get(x)
    per_tensor = (dq is not None and dq.op_type == "DequantizeLinear" and dq.domain == ""
                  and all(name in constants and constants[name].size == 1
                          for name in dq.inputs[1:] if name))
    source = dq.inputs[0] if per_tensor and dq is not None else x
    turned = namer(f"{source}_tokens_last")
    nodes = [make_node("Transpose", [source], [turned], name=namer(f"{mean.name}_transpose"),
                       attrs={"perm": (0, 2, 1)})]
    if per_tensor and dq is not None:
        dequantized = namer(f"{x}_tokens_last")
        nodes.append(dataclasses.replace(dq, inputs=(turned, *dq.inputs[1:]),
                                         outputs=(dequantized,),
                                         name=namer(f"{mean.name}_dequantize")))
        turned = dequantized
    return turned, nodes


def _sole_quantize_reader(readers: list[Node], value: str, outputs: set[str]) -> Node | None:
    """Return the QuantizeLinear that is the only reader of `value` (not a graph output)."""
    if value in outputs or len(readers) != 1:
        return None
    reader = readers[0]
    if reader.op_type != "QuantizeLinear" or reader.domain != "" or reader.inputs[0] != value:
        return None
    return reader


def _is_broadcast_back(graph: Graph, readers: dict[str, list[Node]], mean: Node) -> bool:
    """Return True when `mean`'s result meets a full-length operand as the docstring says."""
    info = graph.type_of(mean.inputs[0])
    assert info is not None and info.shape is not None  # checked by _spatial_rank
    length = info.shape[-1]
    if not isinstance(length, int) or length <= 1:
        return False
    seen: set[str] = set()
    frontier = [mean.outputs[0]]
    while frontier:
        value = frontier.pop()
        if value in seen:
            continue
        seen.add(value)
        for reader in readers.get(value, []):
            if reader.domain != "" or reader.op_type not in _ELEMENTWISE:
                continue
            if reader.op_type in _BINARY and any(
                    _full_length(graph, other, length) for other in reader.inputs[:2]
                    if other != value):
                return True
            frontier.extend(reader.outputs)
    return False


def _full_length(graph: Graph, value: str, length: int) -> bool:
    """Return True when `value` has rank >= 3 and `length` as its last dimension."""
    info = graph.type_of(value)
    return (info is not None and info.shape is not None and len(info.shape) >= 3
            and info.shape[-1] == length)
