"""Shape inference over a bound graph, by calling each operator's `infer` in node order.

Constants carry their values (when small: shape-like data), so shape sub-graphs
(Shape -> Gather -> Concat -> Reshape, ConstantOfShape) fold. A node is inferred when all its
inputs have static shapes; symbolic dimensions (`dim_param`) stay symbolic until
`mapper.dim_binding.bind_inputs` gives them sizes, and nodes downstream of them keep whatever
type the model declared. Every inferred tensor is checked against the memory limit, and every
declared type (graph outputs, value_info) against the inferred one; the symbolic sizes of
value_info entries are hints, re-inferred rather than held to one size per name. A graph
output declared with another shape (same element type) draws a `DeclarationWarning` and takes
the inferred shape, as onnxruntime runs such a model; any other disagreement is a ModelError.
"""

import dataclasses
import warnings
from collections.abc import Mapping, Sequence

from systolic.errors import ModelError, ResourceError
from systolic.ir import Dim, Graph, Node, TensorType, ValueInfo
from systolic.proto.onnx_tensors import element_bytes
from systolic.reference.ops.base import Op, TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning

__all__ = ["FOLD_LIMIT", "DeclarationWarning", "check_size", "infer_shapes", "substitute"]

FOLD_LIMIT = 1 << 16
"""Values with more elements than this are not carried through inference (only their type)."""


def check_size(name: str, dtype_type: TensorType, what: str, max_bytes: int) -> None:
    """Raise ResourceError when a statically shaped value exceeds `max_bytes`."""
    if not dtype_type.is_static:
        return
    assert dtype_type.shape is not None
    count = 1
    for dim in dtype_type.shape:
        assert isinstance(dim, int)
        count *= dim
    size = count * element_bytes(dtype_type.dtype)
    if size > max_bytes:
        raise ResourceError(
            f"{what} {name!r} of shape {list(dtype_type.shape)} needs {size} bytes, more than "
            f"the limit of {max_bytes}: raise the limit (--max-memory) or use smaller inputs"
        )


def substitute(tensor_type: TensorType, symbols: Mapping[str, int]) -> TensorType:
    """Return `tensor_type` with every bound symbolic dimension replaced by its size."""
    if tensor_type.shape is None:
        return tensor_type
    dims: tuple[Dim, ...] = tuple(
        symbols.get(d, d) if isinstance(d, str) else d for d in tensor_type.shape
    )
    return TensorType(tensor_type.dtype, dims)


def infer_shapes(
    graph: Graph,
    ops: Sequence[Op | None],
    *,
    max_tensor_bytes: int,
    symbols: Mapping[str, int] | None = None,
) -> Graph:
    """Return `graph` with inferred types in `value_info` and `outputs` (and bound symbols
    substituted in its inputs). `ops` are the graph's bound Op instances, one per node (None
    for a node the tool does not support: its outputs keep their declared types)."""
    bound = dict(symbols or {})
    known: dict[str, TensorInfo] = {}
    inputs = tuple(
        dataclasses.replace(info, type=substitute(info.type, bound)) for info in graph.inputs
    )
    for info in inputs:
        check_size(info.name, info.type, "graph input", max_tensor_bytes)
        if info.type.is_static:
            known[info.name] = TensorInfo(info.type.dtype, _static(info.type))
    for tensor in graph.initializers:
        value = tensor.data if tensor.size <= FOLD_LIMIT else None
        known[tensor.name] = TensorInfo(tensor.dtype, tensor.shape, value)
    for node, op in zip(graph.nodes, ops, strict=True):
        if op is not None:
            _infer_node(node, op, known, max_tensor_bytes)

    declared = {info.name: info for info in graph.value_info}
    outputs = tuple(_settle(info, known, bound, "graph output") for info in graph.outputs)
    output_names = {info.name for info in graph.outputs}
    value_info: list[ValueInfo] = []
    for node in graph.nodes:
        for name in node.outputs:
            if not name or name in output_names:
                continue
            if name in declared:
                value_info.append(_hint(declared[name], known, bound))
            elif name in known:
                value_info.append(ValueInfo(name, _type_of(known[name])))
    return dataclasses.replace(graph, inputs=inputs, outputs=outputs, value_info=tuple(value_info))


def _infer_node(node: Node, op: Op, known: dict[str, TensorInfo], max_bytes: int) -> None:
    args: list[TensorInfo | None] = []
    for name in node.inputs:
        if not name:
            args.append(None)
        elif name in known:
            args.append(known[name])
        else:
            return  # an input of unknown shape: leave the outputs to their declared types
    try:
        results = op.infer(args)
    except ShapeKnownWhenRunning:
        return  # (an If whose branches differ in sizes): the declared types stand
    named = [(index, name) for index, name in enumerate(node.outputs) if name]
    if named and named[-1][0] >= len(results):
        raise ModelError(
            f"node {node.label!r} ({node.op_id}) names {len(node.outputs)} outputs but the "
            f"operator produces {len(results)}: fix the model"
        )
    for index, name in named:
        result = results[index]
        check_size(name, _type_of(result), f"value (output of node {node.label!r})", max_bytes)
        if result.value is not None and result.value.size > FOLD_LIMIT:
            result = TensorInfo(result.dtype, result.shape)
        known[name] = result


def _static(tensor_type: TensorType) -> tuple[int, ...]:
    assert tensor_type.shape is not None
    return tuple(int(d) for d in tensor_type.shape if isinstance(d, int))


def _type_of(info: TensorInfo) -> TensorType:
    return TensorType(info.dtype, tuple(info.shape))


def _hint(
    info: ValueInfo, known: Mapping[str, TensorInfo], symbols: Mapping[str, int]
) -> ValueInfo:
    """Return a value_info entry with its inferred type. An intermediate's declaration is a
    hint: its element type, rank and fixed sizes are checked, but its symbolic dimensions
    neither bind nor meet the graph's symbols (Paddle names every unknown size '?')."""
    if info.name not in known:
        return dataclasses.replace(info, type=substitute(info.type, symbols))
    return _settle(info, known, {}, "value_info entry")


def _settle(
    info: ValueInfo, known: Mapping[str, TensorInfo], symbols: dict[str, int], role: str
) -> ValueInfo:
    """Return a declared value with its inferred type, after checking the two agree; symbols
    met for the first time are bound to the inferred sizes (one name, one size)."""
    declared = substitute(info.type, symbols)
    if info.name not in known:
        return dataclasses.replace(info, type=declared)
    inferred = known[info.name]
    mismatch = declared.dtype != inferred.dtype or (
        declared.shape is not None and len(declared.shape) != len(inferred.shape)
    )
    if not mismatch and declared.shape is not None:
        for dim, size in zip(declared.shape, inferred.shape):
            if isinstance(dim, int) and dim != size:
                mismatch = True
            elif isinstance(dim, str):
                symbols[dim] = size
    if mismatch:
        used = [d for d in info.type.shape or () if isinstance(d, str) and d in symbols]
        where = (
            " with " + ", ".join(f"{d}={symbols[d]}" for d in dict.fromkeys(used)) if used else ""
        )
        text = (f"{role} {info.name!r} is declared {info.type.text()}{where} but inference "
                f"gives {_type_of(inferred).text()}")
        if role != "graph output" or declared.dtype != inferred.dtype:
            raise ModelError(f"{text}: fix the declaration or the model")
        warnings.warn(DeclarationWarning(f"{text}: the inferred shape is used (onnxruntime "
                                         "runs such a model too, with a warning)"), stacklevel=2)
    return dataclasses.replace(info, type=_type_of(inferred))


class DeclarationWarning(UserWarning):
    """A graph output whose declared shape differs from the one inference gives (an
    exporter's stale declaration: ddddocr's LSTM recognizer declares [1, seqlen] for a
    [T, 1, classes] result); its element type must still agree."""
