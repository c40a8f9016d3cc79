"""Every registered ONNX-domain operator lists exactly the since_versions of the ONNX schema
history up to the highest opset the tool supports: none missing, none invented."""

import onnx.defs
import pytest

from systolic.reference import registry
from systolic.reference.ops import ALL_OPS

MAX_OPSET = registry.SUPPORTED_OPSETS[""][1]


def _schema_versions() -> dict[str, list[int]]:
    history: dict[str, set[int]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx") and schema.since_version <= MAX_OPSET:
            history.setdefault(schema.name, set()).add(schema.since_version)
    return {name: sorted(versions) for name, versions in history.items()}


SCHEMAS = _schema_versions()
ONNX_OPS = [cls for cls in ALL_OPS if cls.domain == ""]


@pytest.mark.parametrize("cls", ONNX_OPS, ids=lambda cls: cls.op_type)
def test_since_versions_match_onnx(cls):
    assert cls.op_type in SCHEMAS, f"{cls.op_type} is not an ONNX operator"
    assert list(cls.since_versions) == SCHEMAS[cls.op_type]


def test_each_operator_is_one_class():
    names = [cls.op_type for cls in ONNX_OPS]
    assert len(names) == len(set(names))
