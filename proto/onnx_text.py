"""Check that every string field of a parsed message is UTF-8, as protobuf's `string` requires.

The Python protobuf runtime (upb) hands a `string` field that holds bytes which are not
UTF-8 back as `bytes` instead of failing to parse, so a flipped byte in a name would reach
code that expects `str`. The importer calls `check_text` once, right after parsing.
"""

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from systolic.errors import ModelError

__all__ = ["check_text"]

_STRING = FieldDescriptor.TYPE_STRING
_MESSAGE = FieldDescriptor.TYPE_MESSAGE
_SHOWN_BYTES = 40


def check_text(root: Message, root_name: str = "model") -> None:
    """Raise ModelError naming the first string field (by its path, for example
    `model.graph.node[3].name`) whose value is not valid UTF-8. Walks the message tree
    iteratively, so any nesting depth is fine; numeric and bytes fields are not visited."""
    pending: list[tuple[Message, str]] = [(root, root_name)]
    while pending:
        message, path = pending.pop()
        for field, value in message.ListFields():
            where = f"{path}.{field.name}"
            repeated = field.is_repeated
            if field.type == _STRING:
                items = list(enumerate(value)) if repeated else [(None, value)]
                for index, item in items:
                    if not isinstance(item, str):
                        _refuse(where if index is None else f"{where}[{index}]", item)
            elif field.type == _MESSAGE:
                if repeated:
                    pending.extend((item, f"{where}[{i}]") for i, item in enumerate(value))
                else:
                    pending.append((value, where))


def _refuse(where: str, raw: bytes) -> None:
    shown = repr(raw[:_SHOWN_BYTES]) + ("..." if len(raw) > _SHOWN_BYTES else "")
    raise ModelError(
        f"{where} is not valid UTF-8 ({shown}): ONNX strings are UTF-8, so the file is corrupt "
        "or was written by a broken exporter; fix or re-export the model"
    )
