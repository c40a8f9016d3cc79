"""A ConvInteger (or MatMulInteger) whose weights minus their zero point do not fit int8, as
one that does.

Older onnxruntime `quantize_dynamic` exports (ddddocr's recognizer) quantize weights uint8
with a zero point near 128, so W - w_zp spans up to [-255, 255]: 9 bits, beyond the array's
8-bit weights, and every such convolution ran on the host. With W' = W - 128 (int8 exactly,
W being uint8) and S = sum over the window of (A - a_zp) (one more output channel of all-ones
weights):

    sum (A - a_zp)(W - w_zp) = sum (A - a_zp) W' + (128 - w_zp) S

so ConvInteger(A, W, a_zp, w_zp) becomes ConvInteger(A, [W'; 1], a_zp) (M + 1 output
channels, int8 weights: `fuse_integer_matmul` puts it on the array), then, on the host in
int32, Slice of the first M channels + (128 - w_zp) * Slice of the last one. Integer identities
throughout (wrapping modulo 2^32 as ConvInteger's own result): bit-exact. Only for uint8
weights, a constant zero point per tensor or per output channel, group 1. A MatMulInteger of
a uint8 B [K, N] likewise: [B - 128 | a column of ones], its sums the last column of the
result.
"""

import numpy as np

from systolic.ir import Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_int,
    constants_of,
    make_node,
    replace_graph,
    splice,
    tensor,
    with_graph,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["widen_conv_integer"]

_WHY = ("the uint8 weights' zero point correction (128 - w_zp) times the window's input sum, "
        "in int32: runs on the host")


def widen_conv_integer(model: Model, report: PassReport) -> Model:
    """Return `model` with each such ConvInteger rewritten (module docstring); the same
    object when there is none."""
    graph = model.graph
    constants = constants_of(graph)
    namer = Namer(graph)
    replaced: dict[int, list[Node]] = {}
    new_constants: list[Tensor] = []
    for node in graph.nodes:
        if not _applies(node, constants):
            continue
        nodes, tensors = _rewrite(node, constants, namer)
        replaced[id(node)] = nodes
        new_constants += tensors
        for step in nodes[1:]:
            report.created(step.name, _WHY)
    if not replaced:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, replaced, set()),
                                           new_constants))


def _axis(node: Node) -> int:
    """The weights' output axis: a ConvInteger's channels (0), a MatMulInteger's columns (1)."""
    return 0 if node.op_type == "ConvInteger" else 1


def _applies(node: Node, constants: dict[str, np.ndarray]) -> bool:
    if node.domain != "" or node.op_type not in ("ConvInteger", "MatMulInteger"):
        return False
    if node.op_type == "ConvInteger" and attr_int(node, "group", 1) != 1:
        return False
    w = constants.get(node.inputs[1])
    zp_name = node.inputs[3] if len(node.inputs) > 3 else ""
    zp = constants.get(zp_name) if zp_name else None
    conv = node.op_type == "ConvInteger"
    if w is None or w.dtype != np.uint8 or zp is None or (w.ndim < 3 if conv else w.ndim != 2):
        return False
    if zp.size not in (1, w.shape[_axis(node)]):
        return False
    shape = [1] * w.ndim
    shape[_axis(node)] = -1
    diff = w.astype(np.int16) - zp.astype(np.int16).reshape(shape if zp.size > 1 else ())
    return bool(diff.size) and (int(diff.min()) < -128 or int(diff.max()) > 127)


def _rewrite(node: Node, constants: dict[str, np.ndarray],
             namer: Namer) -> tuple[list[Node], list[Tensor]]:
    """Return the wide ConvInteger, its two Slices, the Mul and the Add, and constants."""
    w = constants[node.inputs[1]]
    zp = constants[node.inputs[3]].astype(np.int32).reshape(-1)
    axis, base, out = _axis(node), node.name or node.label, node.outputs[0]
    m = w.shape[axis]
    ones = np.ones(tuple(1 if i == axis else d for i, d in enumerate(w.shape)), np.int8)
    wide_w = np.concatenate([(w.astype(np.int16) - 128).astype(np.int8), ones], axis=axis)
    names = {k: namer(f"{base}_{k}") for k in ("weights", "zero", "starts", "ends", "last",
                                                 "axis", "gap")}
    conv = node.op_type == "ConvInteger"
    channel = (1, -1) + (1,) * (w.ndim - 2) if conv else (-1,)
    tensors = [tensor(names["weights"], wide_w), tensor(names["zero"], np.zeros((), np.int8)),
               tensor(names["starts"], np.array([0], np.int64)),
               tensor(names["ends"], np.array([m], np.int64)),
               tensor(names["last"], np.array([m + 1], np.int64)),
               tensor(names["axis"], np.array([1 if conv else -1], np.int64)),
               tensor(names["gap"], (128 - zp).reshape(channel if zp.size > 1 else ()))]
    wide, head, sums, part = (namer(f"{out}_{k}") for k in ("wide", "head", "sums", "part"))
    a_zp = node.inputs[2] if len(node.inputs) > 2 else ""
    nodes = [
        make_node(node.op_type, [node.inputs[0], names["weights"], a_zp, names["zero"]],
                  [wide], name=node.name, attrs=dict(node.attrs)),
        make_node("Slice", [wide, names["starts"], names["ends"], names["axis"]], [head],
                  name=namer(f"{base}_head")),
        make_node("Slice", [wide, names["ends"], names["last"], names["axis"]], [sums],
                  name=namer(f"{base}_sums")),
        make_node("Mul", [sums, names["gap"]], [part], name=namer(f"{base}_gap_mul")),
        make_node("Add", [head, part], [out], name=namer(f"{base}_gap_add")),
    ]
    return nodes, tensors
