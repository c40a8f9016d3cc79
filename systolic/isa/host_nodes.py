"""Host steps in the program format: IR nodes and constants to and from ONNX messages.

A host layer's operator travels in the program file as an ONNX `NodeProto` (its bound version
beside it) and its constant inputs as `TensorProto`s, so a program file is self-contained.
Writing covers the attribute kinds integer graphs use (ints, floats, strings, tensors and
lists of them); reading goes through the importer's own converters.
"""

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import AttrValue, Graph, Node, Tensor
from systolic.isa.program import HostStep
from systolic.proto import AttributeProto, AttributeType, HostStepProto, NodeProto, TensorProto
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
        raise UnsupportedError(f"attribute {name!r} is a subgraph, which host steps cannot hold")
    else:
        raise UnsupportedError(f"attribute {name!r} has a value host steps cannot hold")
    return message


def host_step_to_proto(step: HostStep) -> HostStepProto:
    """Return the message form of a host step."""
    node = step.node
    message = NodeProto(
        op_type=node.op_type,
        domain=node.domain,
        name=node.name,
        input=node.inputs,
        output=node.outputs,
    )
    message.attribute.extend(_attribute(name, value) for name, value in node.attrs.items())
    return HostStepProto(
        layer=step.layer,
        node=message,
        version=node.version,
        constants=[tensor_to_proto(t) for t in step.constants],
    )


def host_step_from_proto(message: HostStepProto) -> HostStep:
    """Return the host step a message holds."""
    node, _ = convert_node(message.node, message.layer, _READ)
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
