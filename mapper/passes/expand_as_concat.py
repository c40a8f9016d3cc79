"""An Expand that repeats a computed tensor along axes of size 1, written as Concats of copies.

Grouped-query attention (LLaMA, Qwen2, Mistral, Gemma, Phi-3 exports of transformers) shares
each key/value head among H / KV query heads: `repeat_kv` exports as

    k [1, KV, S, D] -> Unsqueeze -> [1, KV, 1, S, D] -> Expand [1, KV, H/KV, S, D] -> Reshape

Expand is no accelerator operator, so the keys and values (and everything after them up to
the next quantization) ran on the host. The repetition along an axis of size 1 is a Concat of
that many copies of the input along the axis, which moves the integers once quantized (an
integer layout op, as any Concat). So an Expand whose output is

- input x: float32 or an 8-bit integer, of static shape, not a constant (fold_constants);
- shape: a constant; the output `np.broadcast_shapes(x.shape, shape)` (ONNX's Expand);
- the output repeats x at most `MAX_COPIES` times along each broadcast axis and holds at most
  `MAX_ELEMENTS` elements

becomes: a Reshape to the output's rank (leading 1s, when x has fewer axes), then per
broadcast axis (an axis where x has 1 and the output n > 1, in order) a Concat of n copies.
The result is Expand's, exactly; the last node keeps Expand's name and output. Other Expands
(a mask of booleans or int64, a dynamic shape) are left as they are.
"""

import math

import numpy as np

from systolic.ir import DataType, Model, Node, Tensor
from systolic.mapper.passes.graph_tools import (
    Namer,
    constants_of,
    make_node,
    replace_graph,
    splice,
    tensor,
    with_graph,
)
from systolic.mapper.passes.report import PassReport

__all__ = ["MAX_COPIES", "MAX_ELEMENTS", "expand_as_concat", "repeated_axes"]

MAX_COPIES = 64
"""The most copies of the input along one axis (a longer Concat stays an Expand, on the host)."""

MAX_ELEMENTS = 1 << 20
"""The most elements of the expanded result written this way."""

_TYPES = frozenset({DataType.FLOAT, DataType.INT8, DataType.UINT8})


def repeated_axes(x_shape: tuple[int, ...], shape: tuple[int, ...]
                  ) -> tuple[tuple[int, ...], list[tuple[int, int]]] | None:  # fmt: skip
    """Return (x's shape in the output's rank, [(axis, copies)] of each broadcast axis) of an
    Expand of an input of `x_shape` to `shape`; None when it is not such a repetition (not
    broadcastable, nothing repeated, beyond `MAX_COPIES` or `MAX_ELEMENTS`)."""
    try:
        out = tuple(int(d) for d in np.broadcast_shapes(x_shape, shape))
    except ValueError:
        return None
    padded = (1,) * (len(out) - len(x_shape)) + tuple(x_shape)
    axes = [(axis, n) for axis, (d, n) in enumerate(zip(padded, out, strict=True)) if d != n]
    if (not axes or any(n > MAX_COPIES for _, n in axes) or math.prod(out) > MAX_ELEMENTS
            or math.prod(padded) == 0):
        return None
    return padded, axes


def _rewrite(expand: Node, padded: tuple[int, ...], axes: list[tuple[int, int]],
             x_rank: int, namer: Namer) -> tuple[list[Node], list[Tensor]]:
    """The Reshape (when the rank grows) and Concat nodes that compute `expand`."""
    base, current = expand.name or expand.label, expand.inputs[0]
    nodes: list[Node] = []
    tensors: list[Tensor] = []
    if len(padded) != x_rank:
        shape_name = namer(f"{base}_rank_shape")
        tensors.append(tensor(shape_name, np.array(padded, np.int64)))
        reshaped = namer(f"{current}_ranked")
        nodes.append(make_node("Reshape", [current, shape_name], [reshaped],
                               name=namer(f"{base}_rank")))
        current = reshaped
    for index, (axis, copies) in enumerate(axes):
        last = index == len(axes) - 1
        out = expand.outputs[0] if last else namer(f"{expand.outputs[0]}_axis{axis}")
        name = expand.name if last else namer(f"{base}_axis{axis}")
        nodes.append(make_node("Concat", [current] * copies, [out], name=name,
                               attrs={"axis": axis}))
        current = out
    return nodes, tensors


def expand_as_concat(model: Model, report: PassReport) -> Model:
    """Return `model` with each such Expand (module docstring) written as Concats; `model`
    itself when there is none. `report` is not written: the last Concat keeps Expand's name,
    and its fate (fused as an integer layout op, or host) is recorded later."""
    graph = model.graph
    constants, namer = constants_of(graph), Namer(graph)
    replaced: dict[int, list[Node]] = {}
    new_constants: list[Tensor] = []
    for expand in graph.nodes:
        if expand.op_type != "Expand" or expand.domain != "" or len(expand.inputs) != 2:
            continue
        x, shape = expand.inputs
        found, target = graph.type_of(x), constants.get(shape)
        if (x in constants or target is None or target.ndim != 1 or found is None
                or found.dtype not in _TYPES or not found.is_static or found.shape is None):
            continue
        repeat = repeated_axes(tuple(int(d) for d in found.shape),  # type: ignore[arg-type]
                               tuple(int(d) for d in target))
        if repeat is None:
            continue
        padded, axes = repeat
        nodes, tensors = _rewrite(expand, padded, axes, len(found.shape), namer)
        replaced[id(expand)] = nodes
        new_constants += tensors
    if not replaced:
        return model
    return with_graph(model, replace_graph(graph, splice(graph.nodes, replaced, set()),
                                           new_constants))
