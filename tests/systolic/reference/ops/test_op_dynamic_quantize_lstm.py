"""com.microsoft DynamicQuantizeLSTM against onnxruntime (its CPU kernel defines the operator)
and against the float LSTM of the dequantized weights.

Weights are drawn in [-63, 63] (int8) so that onnxruntime's uint8 x int8 kernel cannot
saturate its int16 pair sums on CPUs without VNNI (255·63·2 < 2^15). Measured agreement with
onnxruntime 1.32: max |diff| 1.8e-7 on these cases and seeds 0..4 with one onnxruntime thread (float32 rounding and its activation
approximations); the stated tolerance is 1e-5 absolute.
"""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import ModelProto, TensorProto, helper, numpy_helper

from systolic.errors import ModelError
from systolic.mapper.importer import load_model, load_model_bytes
from systolic.reference.executor import run_model
from systolic.reference.ops.op_dynamic_quantize_lstm import DynamicQuantizeLSTM
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates

ort = pytest.importorskip("onnxruntime")
SEQ, BATCH, INPUT, HIDDEN = 5, 2, 6, 4
TOLERANCE = 1e-5


def quantized_lstm(*, direction="forward", per_column=False, initial=False, peepholes=False,
                   seed=0, **attrs):
    """Return (ONNX bytes, feeds, float weights) of one DynamicQuantizeLSTM node."""
    r = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    g = 4 * HIDDEN
    shape_of = {"W": (dirs, INPUT, g), "R": (dirs, HIDDEN, g)}
    scale_shape = (dirs, g) if per_column else (dirs,)
    constants = {}
    for name, shape in shape_of.items():
        constants[name] = r.integers(-63, 64, shape).astype(np.int8)
        constants[f"{name}_scale"] = (0.004 + 0.01 * r.random(scale_shape)).astype(np.float32)
        constants[f"{name}_zero_point"] = np.zeros(scale_shape, np.int8)
    constants["B"] = (r.standard_normal((dirs, 2 * g)) * 0.2).astype(np.float32)
    names = ["X", "W", "R", "B", "", "", "", "", "W_scale", "W_zero_point", "R_scale",
             "R_zero_point"]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [SEQ, BATCH, INPUT])]
    feeds = {"X": r.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)}
    if initial:
        for index, name in ((5, "h0"), (6, "c0")):
            names[index] = name
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                        [dirs, BATCH, HIDDEN]))
            feeds[name] = (r.standard_normal((dirs, BATCH, HIDDEN)) * 0.5).astype(np.float32)
    if peepholes:
        constants["P"] = (r.standard_normal((dirs, 3 * HIDDEN)) * 0.3).astype(np.float32)
        names[7] = "P"
    node = helper.make_node("DynamicQuantizeLSTM", names, ["Y", "Y_h", "Y_c"],
                            domain="com.microsoft", hidden_size=HIDDEN, direction=direction,
                            **attrs)
    state = [dirs, BATCH, HIDDEN]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
               for n, s in (("Y", [SEQ, dirs, BATCH, HIDDEN]), ("Y_h", state), ("Y_c", state))]
    initializers = [helper.make_tensor(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape,
                                       v.flatten().tolist()) for k, v in constants.items()]
    graph = helper.make_graph([node], "g", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    return model.SerializeToString(), feeds, constants


def run_both(data, feeds):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1  # one thread: the batch rows are quantized together
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    expected = dict(zip(["Y", "Y_h", "Y_c"], session.run(None, feeds), strict=True))
    got = run_model(load_model_bytes(data), feeds)
    return expected, got


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("per_column", [False, True])
def test_agrees_with_onnxruntime(direction, per_column):
    data, feeds, _ = quantized_lstm(direction=direction, per_column=per_column, initial=True)
    expected, got = run_both(data, feeds)
    for name in expected:
        assert got[name].dtype == np.float32
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=TOLERANCE,
                                   err_msg=name)


def test_options_agree_with_onnxruntime():
    data, feeds, _ = quantized_lstm(direction="bidirectional", peepholes=True, clip=0.8,
                                    input_forget=1, seed=3)
    expected, got = run_both(data, feeds)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=TOLERANCE)


def test_close_to_the_float_lstm_of_the_dequantized_weights():
    """Dynamic quantization of X and H costs accuracy: within 0.05 here (H in [-1, 1])."""
    data, feeds, c = quantized_lstm(direction="bidirectional", seed=5)
    w = (c["W"] * c["W_scale"][:, None, None]).transpose(0, 2, 1)
    r = (c["R"] * c["R_scale"][:, None, None]).transpose(0, 2, 1)
    node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y"], hidden_size=HIDDEN,
                            direction="bidirectional")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [SEQ, BATCH, INPUT])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [SEQ, 2, BATCH, HIDDEN])],
        [helper.make_tensor(k, TensorProto.FLOAT, v.shape, v.flatten().tolist())
         for k, v in (("W", w), ("R", r), ("B", c["B"]))])
    float_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                    ir_version=8)
    reference = run_model(load_model_bytes(float_model.SerializeToString()), feeds)["Y"]
    got = run_model(load_model_bytes(data), feeds)["Y"]
    assert np.abs(got - reference).max() < 0.05


def test_refuses_a_float_weight():
    data, _, _ = quantized_lstm()
    model = ModelProto.FromString(data)
    for index, tensor in enumerate(model.graph.initializer):
        if tensor.name == "W":
            value = numpy_helper.to_array(tensor).astype(np.float32)
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(value, "W"))
    with pytest.raises(ModelError, match="W"):
        load_model_bytes(model.SerializeToString())


def saturating_product(self, a, weights):
    """DynamicQuantizeLSTM._product as onnxruntime's uint8 x int8 kernel computes it on CPUs
    without VNNI: int16-saturated sums of the pairs (2j, 2j+1) of K (weight zero point 0)."""
    a_q, a_scale, a_zp = self._quantize.run([a.astype(np.float32)])
    raw, w = a_q.astype(np.int64), weights.centered
    if raw.shape[1] % 2:
        raw, w = np.pad(raw, ((0, 0), (0, 1))), np.pad(w, ((0, 1), (0, 0)))
    pairs = raw[:, 0::2, None] * w[None, 0::2, :] + raw[:, 1::2, None] * w[None, 1::2, :]
    acc = np.clip(pairs, -(2**15), 2**15 - 1).sum(axis=1) - np.int64(a_zp) * w.sum(axis=0)
    scale = (np.float32(a_scale) * weights.scale).astype(np.float32)
    return (acc.astype(np.int32).astype(np.float32) * scale).astype(np.float32)


def test_lstm2_dynamic_layers_equal_onnxruntime(monkeypatch):
    """The realistic model's two layers (full int8 weights): equal to onnxruntime within 1e-6
    (measured 4.5e-8), with onnxruntime's int16 pair saturation emulated on CPUs that have it
    (there the exact products differ by up to 0.18)."""
    models = Path(__file__).resolve().parents[3] / "models" / "realistic"
    if onnxruntime_saturates():
        monkeypatch.setattr(DynamicQuantizeLSTM, "_product", saturating_product)
    model = onnx.load(models / "lstm2_dynamic.onnx")
    layers = ["lstm_LSTM_output_0", "lstm_LSTM_1_output_0"]
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in layers)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    with np.load(models / "lstm2_inputs.npz") as data:
        feed = {"input": data["input_0"]}
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feed),
                        strict=True))
    values = {}

    def keep(node, _inputs, outputs):
        values.update(zip(node.outputs, outputs, strict=False))

    run_model(load_model(models / "lstm2_dynamic.onnx"), feed, on_node=keep)
    for name in layers:
        np.testing.assert_allclose(values[name], expected[name], rtol=0, atol=1e-6)
