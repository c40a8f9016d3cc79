"""The operator signatures against the ONNX schemas, and the arity check on nodes."""

import onnx.defs
import pytest

from systolic.errors import ModelError
from systolic.reference.ops import ALL_OPS
from systolic.reference.signatures import check_arity, signature_of

_OPTION = onnx.defs.OpSchema.FormalParameterOption


def _formals(parameters: list[onnx.defs.OpSchema.FormalParameter]) -> str:
    marks = {_OPTION.Single: "", _OPTION.Optional: "?", _OPTION.Variadic: "+"}
    return " ".join(p.name.rstrip(".") + marks[p.option] for p in parameters)


@pytest.mark.parametrize("cls", [c for c in ALL_OPS if not c.domain], ids=lambda c: c.op_type)
def test_default_domain_signatures_are_the_onnx_schemas(cls: type) -> None:
    for version in cls.since_versions:
        schema = onnx.defs.get_schema(cls.op_type, version, "")
        expected = (_formals(schema.inputs), _formals(schema.outputs))
        assert signature_of("", cls.op_type, version) == expected, version


def test_every_registered_operator_has_a_signature() -> None:
    missing = [
        (c.domain, c.op_type, v)
        for c in ALL_OPS
        for v in c.since_versions
        if signature_of(c.domain, c.op_type, v) is None
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("op_type", "version", "inputs", "outputs", "message"),
    [
        (
            "Add",
            14,
            ("a",),
            ("c",),
            r"names 1 input\(s\) but the operator takes 2; its inputs are \(A, B\)",
        ),
        ("Relu", 14, ("x", "x"), ("y",), r"names 2 input\(s\) but the operator takes 1"),
        (
            "Relu",
            14,
            ("x",),
            ("y", "z"),
            r"names 2 output\(s\) but the operator takes 1; its outputs are \(Y\)",
        ),
        ("Gemm", 9, ("a", "b"), ("y",), r"names 2 input\(s\) but the operator takes 3"),
        ("Gemm", 13, ("a", "b", "c", "d"), ("y",), r"names 4 input\(s\) but the operator takes 2 to 3"),
        ("Conv", 11, ("", "w"), ("y",), r"leaves required input 0 \(X\) empty"),
        ("Concat", 13, (), ("y",), r"names 0 input\(s\) but the operator takes 1 or more"),
    ],
)
def test_wrong_arity_is_a_model_error(
    op_type: str, version: int, inputs: tuple[str, ...], outputs: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ModelError, match=rf"^node 'n' \(ai\.onnx\.{op_type}:{version}\) {message}"):
        check_arity("", op_type, version, inputs, outputs, "n")


@pytest.mark.parametrize(
    ("op_type", "version", "inputs", "outputs"),
    [
        ("Conv", 11, ("x", "w"), ("y",)),
        ("Conv", 11, ("x", "w", ""), ("y",)),
        ("Clip", 13, ("x", "", "hi"), ("y",)),
        ("Concat", 13, ("a", "b", "c"), ("y",)),
        ("Split", 13, ("x",), ("a", "", "c")),
        ("Dropout", 13, ("x",), ("y", "")),
    ],
)
def test_valid_arity_passes(
    op_type: str, version: int, inputs: tuple[str, ...], outputs: tuple[str, ...]
) -> None:
    check_arity("", op_type, version, inputs, outputs, "n")
    assert signature_of("", op_type, version) is not None
