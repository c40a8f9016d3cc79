"""A QDQ convolution as onnxruntime's quantizer writes it (the bias scale a 1-element 1-D
tensor, its zero point a scalar), in a model importing ai.onnx.ml that no node uses: the
convolution runs on the array, bit-exact (issue 13)."""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.commands.cli import main


def _qdq_conv() -> onnx.ModelProto:
    r = np.random.default_rng(13)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
        helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"]),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
    ]
    values = {"xs": np.float32(0.02), "xz": np.uint8(128),
              "w": r.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8),
              "ws": np.float32(0.01), "wz": np.int8(0),
              "b": r.integers(-500, 500, (4,)).astype(np.int32),
              "bs": np.array([2e-4], np.float32), "bz": np.int32(0),
              "ys": np.float32(0.05), "yz": np.uint8(128)}  # fmt: skip
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in values.items()])
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 3)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def test_onnxruntime_bias_form_runs_on_the_array(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    onnx.save(_qdq_conv(), tmp_path / "m.onnx")
    report_path = tmp_path / "r.json"
    status = main(["simulate", str(tmp_path / "m.onnx"), "--backend", "model", "--array", "4x4",
                   "--json", str(report_path)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    report = json.loads(report_path.read_text())
    assert report["checks"]["reference_bit_exact"]
    units = {layer["op"]: layer["unit"] for layer in report["layers"]}
    assert units["QConv"] == "array", units
