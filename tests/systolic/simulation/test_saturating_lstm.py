"""DynamicQuantizeLSTM's saturation on onnxruntime without VNNI: the activations it quantizes,
the detection, and the uint8 rewrite that makes onnxruntime exact."""

import numpy as np
import pytest

from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import run_model
from systolic.reference.ops import op_dynamic_quantize_lstm
from systolic.simulation.onnxruntime_check import run_onnxruntime
from systolic.simulation.onnxruntime_float_rounding import RELATIVE
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates
from systolic.simulation.saturating_layers import desaturated_model, saturating_layers
from systolic.simulation.saturating_lstm import lstm_overflows, previous_states

onnx = pytest.importorskip("onnx")
quantization = pytest.importorskip("onnxruntime.quantization")
helper, numpy_helper = onnx.helper, onnx.numpy_helper

HIDDEN = 4


def _lstm_model(
    tmp_path, w: np.ndarray, r: np.ndarray, *, seq: int, batch: int = 1,
    direction: str = "forward", lens: bool = False,
) -> bytes:
    """An LSTM (input 'x' [seq, batch, 3], initial_h 'h0', optional 'lens') quantized by
    onnxruntime's quantize_dynamic into a DynamicQuantizeLSTM (int8 weights)."""
    dirs = 2 if direction == "bidirectional" else 1
    inputs = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [seq, batch, 3])]
    names = ["x", "W", "R", "B", "lens" if lens else "", "h0"]
    if lens:
        inputs.append(helper.make_tensor_value_info("lens", onnx.TensorProto.INT32, [batch]))
    inputs.append(helper.make_tensor_value_info("h0", onnx.TensorProto.FLOAT,
                                                [dirs, batch, HIDDEN]))  # fmt: skip
    node = helper.make_node("LSTM", names, ["y"], hidden_size=HIDDEN, direction=direction,
                            name="lstm")  # fmt: skip
    graph = helper.make_graph(
        [node], "g", inputs,
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"),
                     numpy_helper.from_array(np.zeros((dirs, 8 * HIDDEN), np.float32), "B")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    onnx.save(model, tmp_path / "float.onnx")
    quantization.quantize_dynamic(tmp_path / "float.onnx", tmp_path / "dynamic.onnx")
    data = (tmp_path / "dynamic.onnx").read_bytes()
    assert b"DynamicQuantizeLSTM" in data
    return data


def _weights(dirs: int, sign: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """All weights of one magnitude: quantized to ±127 (int8), so that two products of a
    uint8 255 leave int16."""
    w = np.full((dirs, 4 * HIDDEN, 3), sign, np.float32)
    r = np.full((dirs, 4 * HIDDEN, HIDDEN), sign, np.float32)
    return w, r


def _hooked(model, feeds):
    """Run the reference on the model; return the DynamicQuantizeLSTM's args and results."""
    seen = []
    run_model(model, feeds, on_node=lambda node, args, results: seen.append(
        (node, args, results)) if node.op_type == "DynamicQuantizeLSTM" else None)  # fmt: skip
    (node, args, results), = seen
    return node, args, results


@pytest.mark.parametrize(("direction", "lens"), [("forward", False), ("forward", True),
                                                 ("reverse", True), ("bidirectional", True)])
def test_previous_states_are_what_the_reference_quantizes(tmp_path, monkeypatch, direction,
                                                          lens):  # fmt: skip
    rng = np.random.default_rng(3)
    dirs = 2 if direction == "bidirectional" else 1
    w = rng.normal(size=(dirs, 4 * HIDDEN, 3)).astype(np.float32)
    r = rng.normal(size=(dirs, 4 * HIDDEN, HIDDEN)).astype(np.float32)
    model = load_model_bytes(_lstm_model(tmp_path, w, r, seq=5, batch=3, direction=direction,
                                         lens=lens))  # fmt: skip
    feeds = {"x": rng.normal(size=(5, 3, 3)).astype(np.float32),
             "h0": rng.normal(size=(dirs, 3, HIDDEN)).astype(np.float32)}  # fmt: skip
    if lens:
        feeds["lens"] = np.array([5, 2, 0], np.int32)
    quantized = []  # what the reference quantizes, in order: X once per direction, then H
    original = op_dynamic_quantize_lstm.DynamicQuantizeLSTM._product
    monkeypatch.setattr(op_dynamic_quantize_lstm.DynamicQuantizeLSTM, "_product",
                        lambda self, a, weights: quantized.append(a.astype(np.float32))
                        or original(self, a, weights))  # fmt: skip
    _, args, results = _hooked(model, feeds)
    expected = []
    for d in range(dirs):
        expected.append(feeds["x"].reshape(15, 3))
        expected += list(previous_states(args, results[0], d, direction))
    assert len(quantized) == len(expected) == dirs * 6
    for ours, theirs in zip(expected, quantized, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_int8_weights_with_large_activations_overflow(tmp_path):
    model = load_model_bytes(_lstm_model(tmp_path, *_weights(1), seq=1))
    feeds = {"x": np.full((1, 1, 3), 4.0, np.float32),
             "h0": np.zeros((1, 1, HIDDEN), np.float32)}  # fmt: skip
    node, args, results = _hooked(model, feeds)
    assert args[1].dtype == np.int8 and np.abs(args[1]).max() >= 127
    assert lstm_overflows(args, results, "forward")
    layers = saturating_layers(model, feeds)
    assert [(layer.weight_input, layer.zero_point_input) for layer in layers] == [(1, 9), (2, 11)]
    assert {layer.name for layer in layers} == {node.label}


def test_uint8_weights_and_small_products_do_not(tmp_path):
    feeds = {"x": np.full((1, 1, 3), 4.0, np.float32),
             "h0": np.zeros((1, 1, HIDDEN), np.float32)}  # fmt: skip
    data = _lstm_model(tmp_path, *_weights(1), seq=1)
    model = load_model_bytes(data)
    unsigned = load_model_bytes(desaturated_model(data, saturating_layers(model, feeds)))
    _, args, results = _hooked(unsigned, feeds)
    assert args[1].dtype == np.uint8 and args[2].dtype == np.uint8
    assert not lstm_overflows(args, results, "forward")
    assert saturating_layers(unsigned, feeds) == []
    # x = 0 quantizes to 0 (zero point 0): every pair sum is 0
    zeros = {**feeds, "x": np.zeros((1, 1, 3), np.float32)}
    assert not lstm_overflows(*_hooked(model, zeros)[1:], "forward")


def test_the_uint8_rewrite_gives_the_reference_outputs(tmp_path):
    # one step from h0 = 0: only the input projection counts; the gates' float rounding is
    # all that remains (x = 0.25 quantizes to 255: gates of -0.75, away from the tails)
    data = _lstm_model(tmp_path, *_weights(1, -1.0), seq=1)
    model = load_model_bytes(data)
    feeds = {"x": np.full((1, 1, 3), 0.25, np.float32),
             "h0": np.zeros((1, 1, HIDDEN), np.float32)}  # fmt: skip
    ours = run_model(model, feeds)["y"]
    exact = run_onnxruntime(desaturated_model(data, saturating_layers(model, feeds)), feeds)["y"]
    assert np.max(np.abs(exact - ours)) <= RELATIVE * np.max(np.abs(ours))
    saturated = run_onnxruntime(data, feeds)["y"]
    if onnxruntime_saturates():  # the pair sums clip: far from the exact products
        assert np.max(np.abs(saturated - ours)) > 1e-3 * np.max(np.abs(ours))
    else:
        assert np.max(np.abs(saturated - ours)) <= RELATIVE * np.max(np.abs(ours))
