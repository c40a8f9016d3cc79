"""Read an ONNX model into the frozen IR: the only code in the project that touches protobuf.

The pipeline, in order:
1. parse the bytes (`ModelProto`), rejecting empty, truncated and non-ONNX input and
   strings that are not UTF-8;
2. check the IR version and the imported operator sets;
3. convert model-local functions, then the main graph (tensors decoded, external data read
   from the model's folder, sparse initializers densified);
4. inline calls to local functions;
5. check the graph's structure (single assignment, definitions, order, names), and that of
   If's branches (no node output shadowing an outer name);
6. bind every node (branches' nodes too) to an operator version of the reference registry;
7. infer shapes, checking every tensor against the memory limit.
Training information is ignored: the tool does inference only.

Every failure is a `ModelError`, `UnsupportedError` or `ResourceError` with a one-line message.
"""

import dataclasses
import os
from pathlib import Path

from google.protobuf.message import DecodeError

import systolic.reference.executor  # noqa: F401  (installs the services If/Loop/Scan infer with)
from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import Model
from systolic.mapper.binding import (
    bind_graph_marking,
    check_opsets,
    unsupported_error,
)
from systolic.mapper.dim_binding import DEFAULT_MAX_TENSOR_BYTES, bind_inputs
from systolic.mapper.graph_checks import NameWarning, check_graph, warn_bad_names
from systolic.mapper.inline_functions import (
    MAX_NODES,
    FunctionKey,
    LocalFunction,
    convert_function,
    inline_calls,
)
from systolic.mapper.shape_inference import infer_shapes
from systolic.mapper.subgraph_checks import check_subgraphs
from systolic.proto import IR_VERSION, FunctionProto, GraphProto, ModelProto
from systolic.proto.onnx_graph import ReadContext, convert_graph
from systolic.proto.onnx_text import check_text

__all__ = [
    "DEFAULT_MAX_TENSOR_BYTES",
    "MAX_IR_VERSION",
    "MIN_IR_VERSION",
    "NameWarning",
    "bind_inputs",
    "load_model",
    "load_model_bytes",
]

MIN_IR_VERSION = 3
"""The oldest IR version read: the first with opset_import (ONNX 1.0)."""

MAX_IR_VERSION = IR_VERSION
"""The newest IR version the schema describes (14 for onnx 1.23)."""


def load_model(
    path: str | os.PathLike[str],
    *,
    max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES,
    weightless: bool = False,
    mark_unsupported: bool = False,
    lazy_constants: bool = False,
) -> Model:
    """Read the ONNX model at `path`; external data is read relative to its folder.
    `weightless`, `mark_unsupported`, `lazy_constants`: see `load_model_bytes`."""
    model_path = Path(path)
    try:
        data = model_path.read_bytes()
    except IsADirectoryError:
        raise ModelError(f"{str(model_path)!r} is a folder, not an ONNX model file") from None
    except OSError as err:
        raise ModelError(
            f"cannot read model file {str(model_path)!r}: {err.strerror or err}"
        ) from None
    if not data:
        raise ModelError(f"model file {str(model_path)!r} is empty: it holds no ONNX model")
    return load_model_bytes(data, base_dir=model_path.parent.absolute(),
                            max_tensor_bytes=max_tensor_bytes, weightless=weightless,
                            mark_unsupported=mark_unsupported,
                            lazy_constants=lazy_constants)  # fmt: skip


def load_model_bytes(
    data: bytes,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES,
    weightless: bool = False,
    mark_unsupported: bool = False,
    lazy_constants: bool = False,
) -> Model:
    """Read a serialized ONNX model. `base_dir` is the folder external data is relative to;
    without it a model that uses external data is refused. A float constant declared without
    data (a weight-less model, written for shape studies) is refused, unless `weightless`
    (flows that only count cycles, which do not depend on values): then it holds placeholder
    values (`systolic.proto.onnx_tensors.placeholder_values`). Nodes of unsupported operators
    are refused together (one error naming them all), unless `mark_unsupported` (`inspect`):
    then they stay unbound (version 0) and their outputs keep their declared types.
    `lazy_constants` (`inspect`, which describes constants without reading them): large
    initializers are `LazyTensor`s, decoded on first use and not counted against the limit on
    all constants together until a run holds them (`ReadContext.lazy`)."""
    proto = _parse(data)
    _check_ir_version(proto)
    ctx = ReadContext(base_dir=None if base_dir is None else Path(base_dir),
                      max_tensor_bytes=max_tensor_bytes, weightless=weightless,
                      lazy=lazy_constants)  # fmt: skip
    local_domains = sorted({"" if f.domain == "ai.onnx" else f.domain for f in proto.functions})
    raw_opsets = [(o.domain, int(o.version)) for o in proto.opset_import]
    if not raw_opsets:
        raise ModelError(
            f"the model (IR version {proto.ir_version}) imports no operator set; IR version 3 "
            "and later must list them in opset_import (for example ai.onnx)"
        )
    opsets = check_opsets(
        raw_opsets, local_domains=local_domains, used_domains=_used_domains(proto)
    )
    functions = _functions(proto, ctx, opsets, local_domains)
    graph, overloads = convert_graph(proto.graph, ctx)
    warn_bad_names(graph)
    taken = {tensor.name for tensor in graph.initializers}
    taken.update(info.name for info in (*graph.inputs, *graph.outputs))
    for node in graph.nodes:
        taken.update((node.name, *node.inputs, *node.outputs))
    graph = dataclasses.replace(graph, nodes=inline_calls(graph.nodes, overloads, functions, taken))
    graph = check_subgraphs(check_graph(graph))
    graph, ops, missing = bind_graph_marking(graph, opsets)
    if missing and not mark_unsupported:
        raise unsupported_error(missing)
    graph = infer_shapes(graph, ops, max_tensor_bytes=max_tensor_bytes)
    return Model(
        ir_version=int(proto.ir_version),
        opsets=tuple((domain, version) for domain, version in opsets.items()),
        graph=graph,
        producer_name=proto.producer_name,
        producer_version=proto.producer_version,
        domain=proto.domain,
        model_version=int(proto.model_version),
        doc=proto.doc_string,
        metadata=_metadata(proto),
    )


def _parse(data: bytes) -> ModelProto:
    if not data:
        raise ModelError("the model is empty (zero bytes): it holds no ONNX model")
    proto = ModelProto()
    try:
        proto.ParseFromString(bytes(data))
    except DecodeError as err:
        raise ModelError(
            f"not a valid ONNX model: protobuf decoding failed ({err}); the file is truncated, "
            "corrupt or not an .onnx file"
        ) from None
    except (RuntimeError, ValueError) as err:  # for example nesting too deep
        raise ModelError(f"not a valid ONNX model: protobuf decoding failed ({err})") from None
    if not proto.HasField("graph"):
        raise ModelError(
            "not a valid ONNX model: it has no graph (protobuf decoded, but the file is "
            "truncated, corrupt or not an .onnx file)"
        )
    nodes = len(proto.graph.node)
    if nodes > MAX_NODES:
        raise ResourceError(
            f"the graph has {nodes} nodes, more than the {MAX_NODES} this tool handles: split "
            "the model or simplify it (onnxsim) before importing"
        )
    check_text(proto)
    return proto


def _check_ir_version(proto: ModelProto) -> None:
    supported = f"the tool reads IR versions {MIN_IR_VERSION} to {MAX_IR_VERSION}"
    if not proto.HasField("ir_version"):
        raise ModelError(
            f"the model has no ir_version, which every ONNX model must set; {supported}"
        )
    version = int(proto.ir_version)
    if version < MIN_IR_VERSION:
        raise UnsupportedError(
            f"IR version {version} is too old ({supported}): re-export the model with a newer ONNX"
        )
    if version > MAX_IR_VERSION:
        raise UnsupportedError(
            f"IR version {version} is too new ({supported}): export the model for an "
            "older IR version or update this tool"
        )


def _functions(
    proto: ModelProto, ctx: ReadContext, opsets: dict[str, int], local_domains: list[str]
) -> dict[FunctionKey, LocalFunction]:
    functions: dict[FunctionKey, LocalFunction] = {}
    for function_proto in proto.functions:
        function = convert_function(function_proto, ctx, opsets, local_domains)
        if function.key in functions:
            raise ModelError(f"function {function.label} is defined twice: keep one")
        functions[function.key] = function
    return functions


def _used_domains(proto: ModelProto) -> set[str]:
    """Return the domains of every node of the model: its graph, subgraphs and functions."""
    used: set[str] = set()
    pending: list[GraphProto | FunctionProto] = [proto.graph, *proto.functions]
    while pending:
        for node in pending.pop().node:
            used.add(node.domain)
            for attribute in node.attribute:
                pending.extend([attribute.g] if attribute.HasField("g") else attribute.graphs)
    return used


def _metadata(proto: ModelProto) -> tuple[tuple[str, str], ...]:
    seen: set[str] = set()
    for entry in proto.metadata_props:
        if entry.key in seen:
            raise ModelError(
                f"metadata_props key {entry.key!r} is given twice; keys must be distinct"
            )
        seen.add(entry.key)
    return tuple((entry.key, entry.value) for entry in proto.metadata_props)
