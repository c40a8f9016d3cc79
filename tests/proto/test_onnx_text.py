"""Strings that are not UTF-8 are refused by their path, whatever field holds them."""

import re

import pytest

from systolic.errors import ModelError
from systolic.proto import ModelProto
from systolic.proto.onnx_text import check_text


def _model_with(raw_name: bytes, raw_producer: bytes) -> ModelProto:
    """A parsed model whose first node's name and producer hold the given bytes (set through
    the wire format, as a corrupt file would)."""
    model = ModelProto(producer_name="PRODUCER", ir_version=8)
    model.graph.node.add(op_type="Relu", name="NODENAME", input=["x"], output=["y"])
    wire = model.SerializeToString()
    wire = wire.replace(b"NODENAME", raw_name.ljust(8, b"_")).replace(
        b"PRODUCER", raw_producer.ljust(8, b"_")
    )
    parsed = ModelProto()
    parsed.ParseFromString(wire)
    return parsed


def test_valid_text_passes() -> None:
    model = _model_with(b"relu", "pr\u00f6d".encode())
    check_text(model)
    assert model.producer_name == "pr\u00f6d___"


@pytest.mark.parametrize(
    ("name", "producer", "where", "shown"),
    [
        (b"r\xffl", b"ok", "model.graph.node[0].name", r"b'r\\xffl_____'"),
        (b"ok", b"p\xfe", "model.producer_name", r"b'p\\xfe______'"),
    ],
)
def test_invalid_utf8_is_named_by_path(
    name: bytes, producer: bytes, where: str, shown: str
) -> None:
    with pytest.raises(
        ModelError, match=rf"^{re.escape(where)} is not valid UTF-8 \({shown}\): ONNX strings"
    ):
        check_text(_model_with(name, producer))


def test_deep_nesting_is_walked_without_recursion() -> None:
    model = ModelProto()
    attribute = model.graph.node.add(op_type="If").attribute.add(name="then_branch")
    graph = attribute.g
    for _ in range(3000):
        graph = graph.node.add(op_type="If").attribute.add(name="g").g
    graph.name = "deep"
    check_text(model)
    assert graph.name == "deep"
