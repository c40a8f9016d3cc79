"""recurrent_island and quantize_float(region=...): the float LSTM of a quantized model is
unrolled and quantized after training, its borders take the model's own parameters, and the
integer graph stays close to the model as written (the float LSTM run by the reference)."""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from systolic.commands.cli import main
from systolic.mapper.importer import load_model, load_model_bytes
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.recurrent_island import entry_params, exit_params, recurrent_island
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.unroll_recurrent import (
    quantizes_float_recurrent,
    unroll_recurrent_region,
)
from systolic.reference.executor import run_model

from .model_builder import FLOAT, node

REALISTIC = Path(__file__).resolve().parents[2] / "models" / "realistic"
SEQ, INPUT, HIDDEN = 3, 4, 4
SCALE, ZERO = np.float32(0.01), np.uint8(128)


GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
X_SCALE, X_ZERO = np.float32(0.03), np.uint8(125)


def quantized_lstm_proto(zero_point=ZERO, seed=0, seq=SEQ, op="LSTM", entry=""):
    """X (float) [-> Q -> DQ when `entry`; -> Transpose when "transposed": X is then
    [1, seq, input]] -> LSTM -> Squeeze -> QuantizeLinear -> DequantizeLinear -> out: a float
    recurrent layer (`op`) inside a quantized model, as onnxruntime's quantizer leaves it (a
    ModelProto)."""
    r = np.random.default_rng(seed)
    gates = GATES[op] * HIDDEN
    constants = {
        "W": (r.standard_normal((1, gates, INPUT)) * 0.5).astype(np.float32),
        "R": (r.standard_normal((1, gates, HIDDEN)) * 0.5).astype(np.float32),
        "B": (r.standard_normal((1, 2 * gates)) * 0.2).astype(np.float32),
        "axes": np.array([1], np.int64), "s": SCALE, "z": zero_point, "xs": X_SCALE,
        "xz": X_ZERO}
    entry_nodes = [node("QuantizeLinear", ["X", "xs", "xz"], ["Xq"], name="x_q"),
                   node("DequantizeLinear", ["Xq", "xs", "xz"], ["Xd"], name="x_dq")]
    if entry == "transposed":
        entry_nodes.append(node("Transpose", ["Xd"], ["Xt"], perm=[1, 0, 2], name="x_t"))
    x = {"": "X", "dequantized": "Xd", "transposed": "Xt"}[entry]
    nodes = [*(entry_nodes if entry else []),
             node(op, [x, "W", "R", "B"], ["Y"], hidden_size=HIDDEN, name="lstm"),
             node("Squeeze", ["Y", "axes"], ["Ys"], name="squeeze"),
             node("QuantizeLinear", ["Ys", "s", "z"], ["Yq"], name="q"),
             node("DequantizeLinear", ["Yq", "s", "z"], ["out"], name="dq")]
    graph = helper.make_graph(
        nodes, "quantized_lstm",
        [helper.make_tensor_value_info("X", FLOAT, [1, seq, INPUT] if entry == "transposed"
                                       else [seq, 1, INPUT])],
        [helper.make_tensor_value_info("out", FLOAT, [seq, 1, HIDDEN])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def quantized_lstm(zero_point=ZERO, seed=0, **options):
    proto = quantized_lstm_proto(zero_point, seed, **options)
    return load_model_bytes(proto.SerializeToString())


def unrolled_island(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    unrolled, names = unroll_recurrent_region(model, report)
    return finalize(unrolled), names


@pytest.mark.parametrize(("name", "expected"), [
    ("lstm2_qdq", True), ("lstm2_qop", True), ("lstm2_float", False), ("lstm2_dynamic", False)])
def test_quantizes_float_recurrent(name, expected):
    assert quantizes_float_recurrent(load_model(REALISTIC / f"{name}.onnx")) is expected


def test_island_takes_the_layout_ops_after_the_layer():
    unrolled, names = unrolled_island(quantized_lstm())
    island = recurrent_island(unrolled, names)
    assert island - names == {"squeeze"}
    assert {n.name for n in unrolled.graph.nodes} - island == {"q", "dq"}


def test_exit_takes_the_quantize_linear_parameters():
    unrolled, names = unrolled_island(quantized_lstm())
    island = recurrent_island(unrolled, names)
    found = exit_params(unrolled.graph, island, ["Ys", "Y"])
    assert found == {"Ys": (SCALE, ZERO)}


def test_entry_through_layout_ops_takes_the_dequantize_linear_parameters():
    unrolled, names = unrolled_island(quantized_lstm(entry="transposed"))
    island = recurrent_island(unrolled, names)
    assert entry_params(unrolled.graph, island, ["Xt", "Xd", "X"]) == {"Xt": (X_SCALE, X_ZERO)}


def test_int8_exit_takes_its_parameters():
    unrolled, names = unrolled_island(quantized_lstm(np.int8(-3)))
    found = exit_params(unrolled.graph, recurrent_island(unrolled, names), ["Ys"])
    assert found == {"Ys": (SCALE, np.int8(-3))}
    assert found["Ys"][1].dtype == np.int8


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


MOST_STEPS = {"LSTM": 6, "GRU": 26, "RNN": 13}
"""The most output steps the island's result may be off the float layer (measured 4, 24 and
11 on these random layers: weights of deviation 0.5 over 3 steps, 8-bit states requantized
every step; float models' PTQ of the same layers is off by as much)."""


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("entry", ["", "dequantized", "transposed"])
def test_pipeline_quantizes_the_island_with_the_models_parameters(op, entry):
    """Every product a QMatMul, the gates QTables (QMuls, QAdds), no float MatMul, gate
    function or recurrent node; the model's own QuantizeLinear quantizes the layer's result
    and a dequantized input is read as it is (through a Transpose: with the
    DequantizeLinear's parameters, the Transpose on the integers): no QuantizeLinear or
    DequantizeLinear left but the graph input's and the output's (no requantization on the
    host); calibrated on
    32 random inputs, within cosine 0.99 (measured at worst 0.9913, GRU) and MOST_STEPS of
    the float layer on 8 others (the realistic lstm2 below is much closer)."""
    model = quantized_lstm(op=op, entry=entry)
    r = np.random.default_rng(1)
    shape = (1, SEQ, INPUT) if entry == "transposed" else (SEQ, 1, INPUT)
    calibration = [{"X": r.standard_normal(shape).astype(np.float32)} for _ in range(32)]
    integer, report = run_passes(model, calibration=calibration)
    ops = [n.op_type for n in integer.graph.nodes]
    assert not {op, "MatMul", "Sigmoid", "Tanh"} & set(ops), report.text()
    assert {"QMatMul", "QTable", "QAdd"} <= set(ops)
    assert ops.count("QuantizeLinear") == ops.count("DequantizeLinear") == 1
    final = integer.graph.nodes[-1]
    assert final.op_type == "DequantizeLinear" and final.inputs[1:] == ("s", "z")
    for _ in range(8):
        feed = {"X": r.standard_normal(shape).astype(np.float32)}
        want, got = run_model(model, feed)["out"], run_model(integer, feed)["out"]
        assert np.abs(got - want).max() <= MOST_STEPS[op] * SCALE + 1e-6
        assert cosine(got, want) > 0.99


def test_int8_border_keeps_int8():
    """An int8 exit (onnxruntime's QInt8 activations): the island's results that share its
    parameters are int8, the output's DequantizeLinear reads the model's int8 result, no
    other QuantizeLinear or DequantizeLinear than the input's and the output's."""
    model = quantized_lstm(np.int8(0), entry="transposed")
    integer, report = run_passes(model, seed=1)
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops.count("QuantizeLinear") == ops.count("DequantizeLinear") == 1, report.text()
    final = integer.graph.nodes[-1]
    assert integer.graph.type_of(final.inputs[0]).dtype.numpy == np.int8
    feed = {"X": np.random.default_rng(3).standard_normal((1, SEQ, INPUT)).astype(np.float32)}
    want, got = run_model(model, feed)["out"], run_model(integer, feed)["out"]
    assert cosine(got, want) > 0.98


@pytest.mark.parametrize("form", ["qdq", "qop"])
def test_lstm2_runs_its_float_lstm_quantized(form):
    """tests/models/realistic/lstm2_{qdq,qop}: the two float LSTMs become integer ops: no
    float MatMul, LSTM, Sigmoid or Tanh left, the per-step Gathers select integers, and only
    the input's QuantizeLinear and the output's DequantizeLinear are float; the integer
    graph's output stays within cosine 0.9999 and 2 output steps (0.00366) of the model as
    written (its float LSTMs run by the reference) on the four test inputs (measured cosine
    0.99992 to 0.99997, max |error| 0.00183 to 0.00366)."""
    model = load_model(REALISTIC / f"lstm2_{form}.onnx")
    integer, report = run_passes(model)
    ops = [n.op_type for n in integer.graph.nodes]
    assert not {"LSTM", "MatMul", "Sigmoid", "Tanh"} & set(ops), report.text()
    assert ops.count("QMatMul") == 65  # 2 x 4 input projections, 2 x 7 x 4 recurrent, head
    assert ops.count("QTable") == 2 * (8 * 5 - 1)  # 3 sigmoids, 2 tanh; step 0: no forget
    assert ops.count("Gather") == 2 * (8 * 4 - 1)  # step 0 reads no forget gate
    assert ops.count("QuantizeLinear") == ops.count("DequantizeLinear") == 1
    for gather in (n for n in integer.graph.nodes if n.op_type == "Gather"):
        assert integer.graph.type_of(gather.outputs[0]).dtype.numpy == np.uint8
    inputs = np.load(REALISTIC / "lstm2_inputs.npz")
    for index in range(4):
        feed = {"input": inputs[f"input_{index}"]}
        want, got = run_model(model, feed)["output"], run_model(integer, feed)["output"]
        assert cosine(got, want) > 0.9999
        assert np.abs(got - want).max() <= 0.00367


@pytest.mark.parametrize("backend", [
    "model", pytest.param("rtl", marks=pytest.mark.slow)])  # rtl: about 25 s of CPU
def test_simulated_island_is_bit_exact(tmp_path, backend):
    """`systolic simulate` of a 2-step quantized LSTM at 4x4: every MAC on the array, the
    accelerator bit-exact against the reference of the integer graph."""
    path = tmp_path / "quantized_lstm.onnx"
    onnx.save(quantized_lstm_proto(seq=2), path)
    report = tmp_path / "report.json"
    status = main(["simulate", str(path), "--backend", backend, "--array", "4x4", "--json",
                   str(report), "--quiet", "--no-onnxruntime"])
    assert status == 0
    result = json.loads(report.read_text())
    assert result["checks"]["reference_bit_exact"] is True
    assert result["coverage"]["array_mac_fraction"] == 1.0
