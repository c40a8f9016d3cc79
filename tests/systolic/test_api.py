"""The public loading API and the cost of `import systolic`."""

import subprocess
import sys
from pathlib import Path

from onnx import TensorProto, helper

import systolic


def _bytes() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString()


def test_load_and_bind(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(_bytes())
    model = systolic.load(path)
    assert model.graph.outputs[0].type.text() == "f32[N,2]"
    assert systolic.bind(model, {"x": (3, 2)}).graph.outputs[0].type.text() == "f32[3,2]"
    assert systolic.load_bytes(_bytes()).graph.text() == model.graph.text()


def test_import_systolic_is_cheap() -> None:
    code = (
        "import sys, systolic; "
        "print(sorted(m for m in ('amaranth', 'google.protobuf', 'numpy') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
