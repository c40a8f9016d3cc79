"""GroupNormalization (opset 18, 21: torch's dynamo exporter writes it) of a float tensor
[N, C, *S] with constant scale and bias becomes the form torch's TorchScript exporter writes:

    Reshape(x, [N, G, C/G * prod(S)]) -> InstanceNormalization(1, 0, epsilon) -> Reshape(x's
    shape) -> Mul(scale [1, C, 1, ...]) -> Add(bias [1, C, 1, ...])

(the Mul and Add only when not 1 and 0; version 18's scale and bias, one per group, repeated
over each group's channels). The same function in float. `instance_norm_to_layernorm` then
makes the rank-3 InstanceNormalization a layer normalization over the last axis (one
LAYERNORM once quantized), `channel_affine` the per-channel Mul and Add (QMul, QAdd), and, for
one group, `norm_row_order` reads the row in channel-last order. Other inputs (a computed
scale, an unknown shape) stay as they are.
"""

import dataclasses

import numpy as np

from systolic.ir import Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    attr_float,
    attr_int,
    constants_of,
    make_node,
    replace_graph,
    splice,
    tensor,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["group_norm_to_instance_norm"]


def group_norm_to_instance_norm(model: Model, report: PassReport) -> Model:
    """Return `model` with each float GroupNormalization of constant scale and bias over a
    static [N, C, *S] input as the Reshape/InstanceNormalization form (module docstring);
    `model` itself when there is none."""
    graph = model.graph
    constants = constants_of(graph)
    namer, added, replaced = Namer(graph), [], {}
    for node in graph.nodes:
        if node.op_type != "GroupNormalization" or node.domain != "":
            continue
        found = graph.type_of(node.inputs[0])
        scale, bias = (constants.get(name) for name in node.inputs[1:3])
        if (found is None or found.shape is None or not found.is_static or len(found.shape) < 3
                or found.dtype.numpy != np.float32 or scale is None or bias is None):
            continue
        shape = tuple(int(d) for d in found.shape)  # type: ignore[arg-type]
        groups = attr_int(node, "num_groups", 1)
        if groups < 1 or shape[1] % groups:
            continue
        nodes, new = _instance_form(node, shape, groups, (scale, bias), namer)
        replaced[id(node)] = nodes
        added.extend(new)
        report.fused([node.label], f"InstanceNormalization {nodes[1].name!r}")
    if not replaced:
        return model
    return dataclasses.replace(model, graph=replace_graph(
        graph, splice(graph.nodes, replaced, set()), added))


def _per_channel(value: np.ndarray, shape: tuple[int, ...], groups: int) -> np.ndarray:
    """`value` (one entry per group or per channel) as [1, C, 1, ...] for x of `shape`."""
    flat = np.asarray(value, np.float32).reshape(-1)
    if flat.size == groups and groups != shape[1]:
        flat = np.repeat(flat, shape[1] // groups)
    return flat.reshape((1, shape[1]) + (1,) * (len(shape) - 2))


def _instance_form(node: Node, shape: tuple[int, ...], groups: int,
                   affine: tuple[np.ndarray, np.ndarray], namer: Namer
                   ) -> tuple[list[Node], list[Tensor]]:
    """The nodes replacing GroupNormalization `node` over x of `shape`, and their constants."""
    x, out = node.inputs[0], node.outputs[0]
    base = node.name or out
    names = {k: namer(f"{base}_{k}") for k in
             ("grouped_shape", "ones", "zeros", "shape", "grouped", "normalized", "restored")}
    constants = [tensor(names["grouped_shape"], np.array(
                     (shape[0], groups, int(np.prod(shape[1:])) // groups), np.int64)),
                 tensor(names["ones"], np.ones(groups, np.float32)),
                 tensor(names["zeros"], np.zeros(groups, np.float32)),
                 tensor(names["shape"], np.array(shape, np.int64))]
    scale, bias = (_per_channel(v, shape, groups) for v in affine)
    steps = [(op, value) for op, value, neutral in (("Mul", scale, 1.0), ("Add", bias, 0.0))
             if not np.all(value == neutral)]
    restored = names["restored"] if steps else out
    nodes = [make_node("Reshape", (x, names["grouped_shape"]), (names["grouped"],),
                       name=namer(f"{base}_group")),
             make_node("InstanceNormalization", (names["grouped"], names["ones"], names["zeros"]),
                       (names["normalized"],), name=namer(f"{base}_instance_norm"),
                       attrs={"epsilon": attr_float(node, "epsilon", 1e-5)}),
             make_node("Reshape", (names["normalized"], names["shape"]), (restored,),
                       name=namer(f"{base}_ungroup"))]
    last = restored
    for index, (op, value) in enumerate(steps):
        result = out if index == len(steps) - 1 else namer(f"{base}_scaled")
        constant = namer(f"{base}_{op.lower()}_c")
        constants.append(tensor(constant, value))
        nodes.append(make_node(op, (last, constant), (result,), name=namer(f"{base}_{op}")))
        last = result
    return nodes, constants
