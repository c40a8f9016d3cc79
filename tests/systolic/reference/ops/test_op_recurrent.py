"""RNN, GRU and LSTM against onnx's ReferenceEvaluator (plain forms) and onnxruntime (the
attributes the evaluator ignores: sequence_lens, activations, clip, linear_before_reset)."""

import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng
from ..ort_oracle import run_ort

SEQ, BATCH, FEATURES, HIDDEN = 5, 3, 4, 6
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
TOL = {"rtol": 1e-5, "atol": 1e-5}


def _weights(op_type: str, directions: int, seed: int, *, peepholes: bool = False):
    r = rng(seed)
    g = GATES[op_type] * HIDDEN
    x = r.standard_normal((SEQ, BATCH, FEATURES)).astype(np.float32)
    w = (r.standard_normal((directions, g, FEATURES)) * 0.5).astype(np.float32)
    rr = (r.standard_normal((directions, g, HIDDEN)) * 0.5).astype(np.float32)
    b = (r.standard_normal((directions, 2 * g)) * 0.2).astype(np.float32)
    h0 = r.standard_normal((directions, BATCH, HIDDEN)).astype(np.float32)
    inputs = [x, w, rr, b, None, h0]
    if op_type == "LSTM":
        inputs.append(r.standard_normal((directions, BATCH, HIDDEN)).astype(np.float32))
        if peepholes:
            inputs.append((r.standard_normal((directions, 3 * HIDDEN)) * 0.3).astype(np.float32))
    return inputs


def _outputs(op_type: str) -> int:
    return 3 if op_type == "LSTM" else 2


@pytest.mark.parametrize("op_type", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_matches_the_onnx_reference(op_type: str, direction: str) -> None:
    directions = 2 if direction == "bidirectional" else 1
    inputs = _weights(op_type, directions, seed=3, peepholes=True)
    attrs = {"hidden_size": HIDDEN, "direction": direction}
    check_op(op_type, inputs, attrs, opset=14, n_outputs=_outputs(op_type), **TOL)


@pytest.mark.parametrize("op_type", ["RNN", "GRU", "LSTM"])
def test_layout_1_is_batch_first(op_type: str) -> None:
    inputs = _weights(op_type, 1, seed=4)
    inputs[0] = np.ascontiguousarray(inputs[0].transpose(1, 0, 2))
    for state in range(5, len(inputs)):
        inputs[state] = np.ascontiguousarray(inputs[state].transpose(1, 0, 2))
    check_op(op_type, inputs, {"hidden_size": HIDDEN, "layout": 1}, opset=14,
             n_outputs=_outputs(op_type), **TOL)  # fmt: skip


@pytest.mark.parametrize("op_type", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_sequence_lens_match_onnxruntime(op_type: str, direction: str) -> None:
    directions = 2 if direction == "bidirectional" else 1
    inputs = _weights(op_type, directions, seed=5)
    inputs[4] = np.array([SEQ, 2, 0], np.int32)
    attrs = {"hidden_size": HIDDEN, "direction": direction}
    expected = run_ort(op_type, inputs, attrs, opset=14, n_outputs=_outputs(op_type))
    check_op(op_type, inputs, attrs, opset=14, n_outputs=_outputs(op_type), expected=expected,
             **TOL)  # fmt: skip


@pytest.mark.parametrize(("op_type", "attrs"), [
    ("GRU", {"linear_before_reset": 1}),
    ("LSTM", {"input_forget": 1}),
    ("LSTM", {"clip": 0.5}),
    ("RNN", {"activations": ["Relu"]}),
    ("GRU", {"activations": ["HardSigmoid", "LeakyRelu"], "activation_alpha": [0.3, 0.05],
             "activation_beta": [0.4]}),
    ("LSTM", {"activations": ["Sigmoid", "Softsign", "ScaledTanh"],
              "activation_alpha": [0.8], "activation_beta": [1.5]}),
])  # fmt: skip
def test_attributes_match_onnxruntime(op_type: str, attrs: dict) -> None:
    inputs = _weights(op_type, 1, seed=6)
    attrs = {"hidden_size": HIDDEN, **attrs}
    expected = run_ort(op_type, inputs, attrs, opset=14, n_outputs=_outputs(op_type))
    check_op(op_type, inputs, attrs, opset=14, n_outputs=_outputs(op_type), expected=expected,
             **TOL)  # fmt: skip


def test_only_the_requested_outputs_and_no_optional_inputs() -> None:
    x, w, r = _weights("LSTM", 1, seed=7)[:3]
    check_op("LSTM", [x, w, r], {"hidden_size": HIDDEN}, opset=7, **TOL)


@pytest.mark.parametrize(("attrs", "message"), [
    ({"direction": "sideways"}, r"direction 'sideways' is not forward, reverse or bidirectional"),
    ({"activations": ["Sigmoid"]}, r"activations lists 1 functions; LSTM forward needs 3"),
    ({"activations": ["Sigmoid", "Gelu", "Tanh"]}, r"activation 'Gelu' is not one of"),
    ({"clip": -1.0}, r"clip must be positive, not -1.0"),
])  # fmt: skip
def test_bad_attributes_are_model_errors(attrs: dict, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        make_op("LSTM", attrs, 14)


def test_weight_shapes_are_checked() -> None:
    from systolic.ir import DataType
    from systolic.reference.ops.base import TensorInfo

    op = make_op("GRU", {"hidden_size": HIDDEN}, 14)
    x = TensorInfo(DataType.FLOAT, (SEQ, BATCH, FEATURES))
    w = TensorInfo(DataType.FLOAT, (1, 4 * HIDDEN, FEATURES))
    r = TensorInfo(DataType.FLOAT, (1, 3 * HIDDEN, HIDDEN))
    with pytest.raises(ModelError, match=r"W has shape \[1, 24, 4\], expected \[1, 18, 4\]"):
        op.infer([x, w, r])
