"""Our `onnx_ir.proto` declares exactly what onnx's `onnx-ml.proto` declares.

Walks onnx's descriptors and ours side by side: every message (nested ones too) and enum exists
on both sides with the same fields (name, number, type, label, packedness, presence, oneof,
referenced type) and the same reserved numbers and names, and the same enum values. Only the
package differs (`onnx` there, `systolic.onnx` here).
"""

from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from systolic.proto import ModelProto

onnx_ml_pb2 = pytest.importorskip(
    "onnx.onnx_ml_pb2", reason="the onnx package (extra `test`) is not installed"
)

THEIRS = onnx_ml_pb2.DESCRIPTOR
OURS = ModelProto.DESCRIPTOR.file


def _local(full_name: str, package: str) -> str:
    """Return `full_name` without its package prefix."""
    prefix = package + "."
    assert full_name.startswith(prefix), full_name
    return full_name[len(prefix) :]


def _messages(descriptors: Any) -> Iterator[Descriptor]:
    for message in descriptors:
        yield message
        yield from _messages(message.nested_types)


def _enums(file: Any) -> Iterator[EnumDescriptor]:
    yield from file.enum_types_by_name.values()
    for message in _messages(file.message_types_by_name.values()):
        yield from message.enum_types


def _by_local_name(items: Iterator[Any], package: str) -> dict[str, Any]:
    return {_local(item.full_name, package): item for item in items}


THEIR_MESSAGES = _by_local_name(_messages(THEIRS.message_types_by_name.values()), THEIRS.package)
OUR_MESSAGES = _by_local_name(_messages(OURS.message_types_by_name.values()), OURS.package)
THEIR_ENUMS = _by_local_name(_enums(THEIRS), THEIRS.package)
OUR_ENUMS = _by_local_name(_enums(OURS), OURS.package)


def _field_signature(field: FieldDescriptor, package: str) -> dict[str, Any]:
    """Return everything about `field` that affects the wire format or the generated API."""
    referenced = field.message_type or field.enum_type
    return {
        "number": field.number,
        "type": field.type,
        "repeated": field.is_repeated,
        "required": field.is_required,
        "has_presence": field.has_presence,
        "packed": field.is_packed,
        "oneof": field.containing_oneof.name if field.containing_oneof else None,
        "references": _local(referenced.full_name, package) if referenced else None,
        "default": field.default_value if not field.is_repeated else None,
    }


def _reserved(message: Descriptor) -> tuple[list[tuple[int, int]], list[str]]:
    proto = descriptor_pb2.DescriptorProto()
    message.CopyToProto(proto)
    ranges = sorted((r.start, r.end) for r in proto.reserved_range)
    return ranges, sorted(proto.reserved_name)


def test_same_messages_and_enums() -> None:
    assert sorted(OUR_MESSAGES) == sorted(THEIR_MESSAGES)
    assert sorted(OUR_ENUMS) == sorted(THEIR_ENUMS)
    assert "TensorShapeProto.Dimension" in OUR_MESSAGES
    assert "TensorProto.DataType" in OUR_ENUMS


def test_package_differs_so_both_load_in_one_process() -> None:
    assert OURS.package == "systolic.onnx"
    assert THEIRS.package == "onnx"
    ours, theirs = descriptor_pb2.FileDescriptorProto(), descriptor_pb2.FileDescriptorProto()
    OURS.CopyToProto(ours)
    THEIRS.CopyToProto(theirs)
    assert (ours.syntax, ours.edition) == (theirs.syntax, theirs.edition)


@pytest.mark.parametrize("name", sorted(THEIR_MESSAGES))
def test_message_fields_match(name: str) -> None:
    theirs, ours = THEIR_MESSAGES[name], OUR_MESSAGES[name]
    their_fields = {field.name: _field_signature(field, THEIRS.package) for field in theirs.fields}
    our_fields = {field.name: _field_signature(field, OURS.package) for field in ours.fields}
    assert our_fields == their_fields
    assert [oneof.name for oneof in ours.oneofs] == [oneof.name for oneof in theirs.oneofs]
    assert _reserved(ours) == _reserved(theirs)


@pytest.mark.parametrize("name", sorted(THEIR_ENUMS))
def test_enum_values_match(name: str) -> None:
    theirs, ours = THEIR_ENUMS[name], OUR_ENUMS[name]
    assert [(v.name, v.number) for v in ours.values] == [(v.name, v.number) for v in theirs.values]
