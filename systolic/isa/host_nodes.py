"""Host steps in the program format: IR nodes and constants to and from ONNX messages.

A host layer's operator travels in the program file as an ONNX `NodeProto` (its bound version
beside it) and its constant inputs as `TensorProto`s, so a program file is self-contained.
Writing covers the attribute kinds integer graphs use (ints, floats, strings, tensors and
lists of them) and If's branches (a GraphProto whose metadata_props "systolic.versions" lists
the bound version of each of its nodes); reading goes through the importer's own converters.
"""

import dataclasses

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, AttrValue, Graph, Node, Tensor
from systolic.isa.program import HostStep
from systolic.proto import (
    AttributeProto,
    AttributeType,
    GraphProto,
    HostStepProto,
    NodeProto,
    TensorProto,
    ValueInfoProto,
)
from systolic.proto.onnx_graph import ReadContext, convert_node, convert_tensor

__all__ = ["host_step_from_proto", "host_step_to_proto", "tensor_to_proto"]

_READ = ReadContext(base_dir=None, max_tensor_bytes=1 << 40)


def tensor_to_proto(tensor: Tensor) -> TensorProto:
    """Return `tensor` as a TensorProto with raw little-endian data (strings as string_data)."""
    message = TensorProto(name=tensor.name, data_type=int(tensor.dtype), dims=tensor.shape)
    if tensor.data.dtype == object:
        message.string_data.extend(
            v if isinstance(v, bytes) else str(v).encode() for v in tensor.data.reshape(-1)
        )
    else:
        data = np.ascontiguousarray(tensor.data)
        message.raw_data = data.astype(data.dtype.newbyteorder("<")).tobytes()
    return message


def _attribute(name: str, value: AttrValue) -> AttributeProto:
    message = AttributeProto(name=name)
    if isinstance(value, bool | int):
        message.type, message.i = AttributeType.INT, int(value)
    elif isinstance(value, float):
        message.type, message.f = AttributeType.FLOAT, value
    elif isinstance(value, str | bytes):
        message.type = AttributeType.STRING
        message.s = value.encode() if isinstance(value, str) else value
    elif isinstance(value, Tensor):
        message.type = AttributeType.TENSOR
        message.t.CopyFrom(tensor_to_proto(value))
    elif isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        message.type = AttributeType.INTS
        message.ints.extend(int(v) for v in value)  # type: ignore[arg-type]
    elif isinstance(value, tuple) and all(isinstance(v, float | int) for v in value):
        message.type = AttributeType.FLOATS
        message.floats.extend(float(v) for v in value)  # type: ignore[arg-type]
    elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        message.type = AttributeType.STRINGS
        message.strings.extend(str(v).encode() for v in value)
    elif isinstance(value, tuple) and all(isinstance(v, Tensor) for v in value):
        message.type = AttributeType.TENSORS
        message.tensors.extend(tensor_to_proto(v) for v in value)  # type: ignore[arg-type]
    elif isinstance(value, Graph):
        message.type = AttributeType.GRAPH
        message.g.CopyFrom(_graph_to_proto(value))
    else:
        raise UnsupportedError(f"attribute {name!r} has a value host steps cannot hold")
    return message


_VERSIONS = "systolic.versions"
"""The metadata key of a written subgraph listing its nodes' bound versions, in node order."""


def _node_to_proto(node: Node) -> NodeProto:
    message = NodeProto(
        op_type=node.op_type,
        domain=node.domain,
        name=node.name,
        input=node.inputs,
        output=node.outputs,
    )
    message.attribute.extend(_attribute(name, value) for name, value in node.attrs.items())
    return message


def _graph_to_proto(graph: Graph) -> GraphProto:
    message = GraphProto(name=graph.name, node=[_node_to_proto(n) for n in graph.nodes],
                         initializer=[tensor_to_proto(t) for t in graph.initializers])
    for info in graph.outputs:
        value = ValueInfoProto(name=info.name)
        value.type.tensor_type.elem_type = int(info.type.dtype)
        if info.type.shape is not None:
            shape = value.type.tensor_type.shape
            for dim in info.type.shape:
                size = shape.dim.add()
                if isinstance(dim, int):
                    size.dim_value = dim
                elif isinstance(dim, str):
                    size.dim_param = dim
        message.output.append(value)
    entry = message.metadata_props.add()
    entry.key, entry.value = _VERSIONS, ",".join(str(n.version) for n in graph.nodes)
    return message


def _with_versions(node: Node, message: NodeProto) -> Node:
    """Return `node` (read from `message`) with its subgraphs' nodes at their written
    versions, at any depth."""
    if not node.subgraphs:
        return node
    written = {a.name: a.g for a in message.attribute if a.HasField("g")}
    attrs: dict[str, AttrValue] = {}
    for name, value in node.attrs.items():
        if isinstance(value, Graph) and name in written:
            value = _graph_with_versions(value, written[name])
        attrs[name] = value
    return dataclasses.replace(node, attrs=Attrs(attrs))


def _graph_with_versions(graph: Graph, message: GraphProto) -> Graph:
    listed = next((e.value for e in message.metadata_props if e.key == _VERSIONS), "")
    versions = [int(v) for v in listed.split(",") if v]
    if len(versions) != len(graph.nodes):
        raise UnsupportedError(f"subgraph {graph.name!r} of a host step lists no versions for "
                               "its nodes: write the program again")
    nodes = tuple(
        dataclasses.replace(_with_versions(node, proto), version=version)
        for node, proto, version in zip(graph.nodes, message.node, versions, strict=True)
    )
    return dataclasses.replace(graph, nodes=nodes)


def host_step_to_proto(step: HostStep) -> HostStepProto:
    """Return the message form of a host step."""
    node = step.node
    message = _node_to_proto(node)
    return HostStepProto(
        layer=step.layer,
        node=message,
        version=node.version,
        constants=[tensor_to_proto(t) for t in step.constants],
    )


def host_step_from_proto(message: HostStepProto) -> HostStep:
    """Return the host step a message holds."""
    node, _ = convert_node(message.node, message.layer, _READ)
    node = _with_versions(node, message.node)
    node = Node(
        op_type=node.op_type,
        inputs=node.inputs,
        outputs=node.outputs,
        domain=node.domain,
        version=message.version,
        name=node.name,
        attrs=node.attrs,
    )
    constants = tuple(
        convert_tensor(t, f"constant {t.name!r} of host step {message.layer}", _READ)
        for t in message.constants
    )
    return HostStep(message.layer, node, constants)
