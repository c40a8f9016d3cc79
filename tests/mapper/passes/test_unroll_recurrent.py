"""unroll_recurrent: the unrolled float graph computes what the RNN/GRU/LSTM node computes
(the reference's op_recurrent), in float64 to 1e-10, for every direction, layout and option;
refusals keep the node with the reason noted."""

import numpy as np
import pytest
from onnx import helper

from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.unroll_recurrent import unroll_recurrent, unroll_recurrent_region
from systolic.reference.executor import run_model

from .model_builder import build

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
SEQ, BATCH, INPUT, HIDDEN = 4, 2, 3, 5


def recurrent_model(op, *, direction="forward", layout=0, seq=SEQ, bias=True, initial=None,
                    peepholes=False, lens=None, dtype=np.float64, seed=0, **attrs):
    """Return (model, feeds) of one recurrent node with random constant weights; `initial`
    None (absent), "zero", "const" (random constants) or "input" (graph inputs)."""
    r = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op] * HIDDEN
    constants = {"W": r.standard_normal((dirs, g, INPUT)) * 0.6,
                 "R": r.standard_normal((dirs, g, HIDDEN)) * 0.6}
    names = ["X", "W", "R", "", "", "", "", ""]
    if bias:
        constants["B"] = r.standard_normal((dirs, 2 * g)) * 0.3
        names[3] = "B"
    if lens is not None:
        constants["lens"] = np.full(BATCH, lens, np.int32)
        names[4] = "lens"
    state = [dirs, BATCH, HIDDEN] if layout == 0 else [BATCH, dirs, HIDDEN]
    inputs = [("X", dtype, [seq, BATCH, INPUT] if layout == 0 else [BATCH, seq, INPUT])]
    feeds = {"X": r.standard_normal(inputs[0][2]).astype(dtype)}
    for index, name in ((5, "h0"), (6, "c0")):
        if initial is None or (name == "c0" and op != "LSTM"):
            continue
        names[index] = name
        if initial == "input":
            inputs.append((name, dtype, state))
            feeds[name] = r.standard_normal(state).astype(dtype)
        else:
            constants[name] = (np.zeros(state) if initial == "zero"
                               else r.standard_normal(state) * 0.5)
    if peepholes:
        constants["P"] = r.standard_normal((dirs, 3 * HIDDEN)) * 0.5
        names[7] = "P"
    while names[-1] == "":
        names.pop()
    outputs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    y_shape = [seq, dirs, BATCH, HIDDEN] if layout == 0 else [BATCH, seq, dirs, HIDDEN]
    shapes = [y_shape, state, state]
    node = helper.make_node(op, names, outputs, hidden_size=HIDDEN, direction=direction,
                            **({"layout": layout} if layout else {}), **attrs)
    constants = {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in constants.items()}
    model = build([node], inputs, [(o, dtype, s) for o, s in zip(outputs, shapes)], constants,
                  opset=14)
    return model, feeds


def unroll(model):
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(unroll_recurrent(model, report)), report


def assert_unrolled_equal(model, feeds):
    unrolled, report = unroll(model)
    assert all(n.op_type not in GATES for n in unrolled.graph.nodes), report.text()
    expected = run_model(model, feeds)
    got = run_model(unrolled, feeds)
    assert expected.keys() == got.keys()
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-10, atol=1e-10, err_msg=name)
    return unrolled


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_every_direction_and_layout(op, direction, layout):
    model, feeds = recurrent_model(op, direction=direction, layout=layout, initial="const")
    assert_unrolled_equal(model, feeds)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("initial", [None, "zero", "input"])
def test_initial_states(op, initial):
    model, feeds = recurrent_model(op, direction="bidirectional", initial=initial, bias=False)
    assert_unrolled_equal(model, feeds)


def test_zero_initial_state_has_no_first_recurrent_matmul():
    model, feeds = recurrent_model("LSTM", initial="zero", seq=1)
    unrolled = assert_unrolled_equal(model, feeds)
    matmuls = [n for n in unrolled.graph.nodes if n.op_type == "MatMul"]
    assert len(matmuls) == 4  # the input projections only


def test_lstm_peepholes_clip_input_forget():
    for layout in (0, 1):
        model, feeds = recurrent_model("LSTM", direction="bidirectional", layout=layout,
                                       initial="const", peepholes=True, clip=0.7,
                                       input_forget=1)
        assert_unrolled_equal(model, feeds)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("initial", [None, "const"])
def test_gru_linear_before_reset(linear_before_reset, initial):
    model, feeds = recurrent_model("GRU", direction="bidirectional", initial=initial, clip=1.5,
                                   linear_before_reset=linear_before_reset)
    assert_unrolled_equal(model, feeds)


@pytest.mark.parametrize("op, activations, alpha, beta", [
    ("RNN", ["Affine", "ScaledTanh"], [0.5, 1.5], [0.2, 0.7]),
    ("RNN", ["LeakyRelu", "ThresholdedRelu"], [0.1, 0.3], []),
    ("GRU", ["HardSigmoid", "Elu", "Softsign", "Softplus"], [0.3, 0.9], [0.4]),
    ("LSTM", ["Sigmoid", "Relu", "Tanh", "HardSigmoid", "Softsign", "ScaledTanh"], [], []),
])
def test_activations(op, activations, alpha, beta):
    attrs = {"activations": activations}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    model, feeds = recurrent_model(op, direction="bidirectional", initial="const", **attrs)
    assert_unrolled_equal(model, feeds)


def test_float32_within_float32_rounding():
    model, feeds = recurrent_model("LSTM", direction="bidirectional", dtype=np.float32,
                                   initial="const")
    unrolled, _ = unroll(model)
    expected, got = run_model(model, feeds), run_model(unrolled, feeds)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5)


def test_full_constant_sequence_lens_unrolls():
    model, feeds = recurrent_model("GRU", lens=SEQ)
    assert_unrolled_equal(model, feeds)


def test_short_sequence_lens_stays_with_the_reason():
    model, _ = recurrent_model("LSTM", lens=SEQ - 1)
    unrolled, report = unroll(model)
    assert [n.op_type for n in unrolled.graph.nodes] == ["LSTM"]
    assert "sequence_lens" in report.note_of(unrolled.graph.nodes[0].label)


def test_computed_weights_stay_with_the_reason():
    r = np.random.default_rng(5)
    nodes = [helper.make_node("Identity", ["Wi"], ["W"]),
             helper.make_node("RNN", ["X", "W", "R"], ["Y"], hidden_size=2, name="rnn")]
    model = build(nodes, [("X", np.float32, [3, 1, 2]), ("Wi", np.float32, [1, 2, 2])],
                  [("Y", np.float32, [3, 1, 1, 2])],
                  {"R": r.standard_normal((1, 2, 2)).astype(np.float32)})
    unrolled, report = unroll(model)
    assert "RNN" in [n.op_type for n in unrolled.graph.nodes]
    assert report.note_of("rnn") == "W is not a constant"


def test_quantized_model_unrolls_its_float_rnn_and_names_the_island():
    nodes = [helper.make_node("RNN", ["X", "W", "R"], ["Y"], hidden_size=HIDDEN, name="rnn"),
             helper.make_node("QuantizeLinear", ["Y", "s", "z"], ["Yq"], name="q")]
    r = np.random.default_rng(6)
    quantized = build(nodes, [("X", np.float32, [SEQ, BATCH, INPUT])],
                      [("Yq", np.uint8, [SEQ, 1, BATCH, HIDDEN])],
                      {"W": r.standard_normal((1, HIDDEN, INPUT)).astype(np.float32),
                       "R": r.standard_normal((1, HIDDEN, HIDDEN)).astype(np.float32),
                       "s": np.float32(0.01), "z": np.uint8(128)})
    report = PassReport((n.label, n.op_id) for n in quantized.graph.nodes)
    unrolled, island = unroll_recurrent_region(quantized, report)
    ops = [n.op_type for n in unrolled.graph.nodes]
    assert "RNN" not in ops and ops[-1] == "QuantizeLinear"
    assert island == {n.name for n in unrolled.graph.nodes[:-1]}
    first = next(n for n in unrolled.graph.nodes if n.op_type == "MatMul")
    assert report.fate("rnn").into == (f"{len(island)} nodes unrolled over the sequence, "
                                       f"the first product {first.name!r}")
    feeds = {"X": r.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)}
    got = run_model(finalize(unrolled), feeds)["Yq"].astype(np.int64)
    assert np.abs(got - run_model(quantized, feeds)["Yq"]).max() <= 1  # float32 rounding


@pytest.mark.parametrize("op, attrs", [("LSTM", {"direction": "bidirectional"}),
                                       ("GRU", {"linear_before_reset": 1}), ("GRU", {}),
                                       ("RNN", {"direction": "reverse"})])
def test_pipeline_puts_the_unrolled_layer_on_the_accelerator(op, attrs):
    """After quantize_float and the fusions: every product is a QMatMul, the gates are
    QTables, QMuls and QAdds (the first step's too: its Gathers keep the projection's
    parameters); no float MatMul or gate function is left; the integer graph's result stays
    within cosine 0.99 of the float layer (measured 0.992 to 0.9998: 8-bit states,
    requantized every step, on these random weights)."""
    model, feeds = recurrent_model(op, dtype=np.float32, bias=True, seq=6, **attrs)
    integer, report = run_passes(model, seed=1)
    ops = [n.op_type for n in integer.graph.nodes]
    assert not {"MatMul", op, "Sigmoid", "Tanh"} & set(ops), report.text()
    assert {"QMatMul", "QTable", "QAdd"} <= set(ops)
    if op != "RNN":
        assert "QMul" in ops
    expected, got = run_model(model, feeds)["Y"].ravel(), run_model(integer, feeds)["Y"].ravel()
    cosine = expected @ got / np.linalg.norm(expected) / np.linalg.norm(got)
    assert cosine > 0.99
