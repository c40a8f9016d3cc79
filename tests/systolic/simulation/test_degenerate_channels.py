"""A float model whose convolutions have all-zero and near-zero (1e-39, 3e-40) weight channels
and real biases: the quantizer guards those channels' scales, so every convolution runs on
the array, bit-exact (issue 13; unguarded, the requantization multiplier underflows and the
quantized bias overflows int32, and both convolutions fell back to the host)."""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.commands.cli import main


def _model() -> onnx.ModelProto:
    r = np.random.default_rng(17)
    w1 = (r.standard_normal((6, 3, 3, 3)) * 0.3).astype(np.float32)
    w1[1] = 0.0
    w1[2] = np.float32(1e-39) * np.sign(r.standard_normal((3, 3, 3))).astype(np.float32)
    w1[3] = np.float32(3e-40)
    w2 = (r.standard_normal((4, 6, 3, 3)) * 0.3).astype(np.float32)
    w2[0] = np.float32(1e-39)
    values = {"w1": w1, "b1": (r.standard_normal(6) * 0.5).astype(np.float32),
              "w2": w2, "b2": (r.standard_normal(4) * 0.5).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "degenerate", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=[numpy_helper.from_array(v, k) for k, v in values.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_degenerate_channels_stay_on_the_array(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    onnx.save(_model(), tmp_path / "m.onnx")
    assert main(["simulate", str(tmp_path / "m.onnx"), "--backend", "model", "--array", "4x4",
                 "--json", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    convs = [layer for layer in report["layers"] if "Conv" in layer["op"]]
    assert [layer["unit"] for layer in convs] == ["array", "array"], convs
    assert report["checks"]["reference_bit_exact"]
    assert report["checks"]["quantization"]["cosine_similarity"] > 0.999
    assert report["coverage"]["host_macs"] == 0


def test_host_notes_give_the_passes_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Without the guard the convolutions fall back to the host; the JSON note says why (the
    numeric limit the fusion met), not that a Conv is no accelerator operator."""
    from systolic.mapper.passes import quantize_float

    unguarded = quantize_float.quantize_weights
    monkeypatch.setattr(quantize_float, "quantize_weights",
                        lambda w, axis, guard=None: unguarded(w, axis))
    onnx.save(_model(), tmp_path / "m.onnx")
    assert main(["simulate", str(tmp_path / "m.onnx"), "--backend", "model", "--array", "4x4",
                 "--json", str(tmp_path / "r.json")]) == 0
    layers = json.loads((tmp_path / "r.json").read_text())["layers"]
    notes = {layer["note"] for layer in layers if layer["op"] == "Conv"}
    assert notes == {"the quantized bias does not fit int32"}
