"""Float rounding before a dynamic quantization, told apart from saturation and from a real
difference, on small hand-made models: the replay proof (`float_rounding_explains`) and the
explanation `explain_difference` gives."""

import numpy as np
import pytest

from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import run_model
from systolic.simulation.onnxruntime_check import compare_outputs, run_onnxruntime
from systolic.simulation.onnxruntime_explain import explain_difference
from systolic.simulation.onnxruntime_float_rounding import (
    float_rounding_explains,
    quantizer_inputs,
)
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
helper, numpy_helper = onnx.helper, onnx.numpy_helper

ROWS, K, TERMS = 64, 8, 10


def _model(w: np.ndarray, *, mean: bool = True) -> bytes:
    """y = DynamicQuantizeLinear(m) -> MatMulInteger by `w` [K, 3] -> float, where m is
    ReduceMean(x [ROWS, K, TERMS], axis 2) (`mean`) or x [ROWS, K] itself."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[2], keepdims=0, name="mean")]
    if not mean:
        nodes = [helper.make_node("Identity", ["x"], ["m"], name="same")]  # exact
    nodes += [
        helper.make_node("DynamicQuantizeLinear", ["m"], ["q", "s", "z"], name="dq"),
        helper.make_node("MatMulInteger", ["q", "w", "z", "wz"], ["acc"], name="mm"),
        helper.make_node("Cast", ["acc"], ["accf"], to=onnx.TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["accf", "s"], ["y"], name="scale"),
    ]
    shape = [ROWS, K, TERMS] if mean else [ROWS, K]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [ROWS, 3])],
        initializer=[numpy_helper.from_array(w, "w"),
                     numpy_helper.from_array(np.zeros((), w.dtype), "wz")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return model.SerializeToString()


def _means_on_half_steps() -> np.ndarray:
    """x [ROWS, K, TERMS] whose means are k + 0.5 up to float32 rounding, from 0 to 255: the
    quantization step is 1, so the last bit of each mean picks its step."""
    rng = np.random.default_rng(0)
    head = rng.uniform(0, 255, size=(ROWS, K, TERMS - 1)).astype(np.float32)
    target = rng.integers(0, 254, size=(ROWS, K)) + 0.5
    last = (TERMS * target - head.astype(np.float64).sum(2)).astype(np.float32)
    x = np.concatenate([head, last[..., None]], axis=2)
    x[0], x[1] = 0, 255  # the range [0, 255]
    return x


UNSIGNED = np.full((K, 3), 2, np.uint8)
"""uint8 weights: onnxruntime's exact uint8 x uint8 kernels."""
SIGNED = np.full((K, 3), -128, np.int8)
"""int8 weights: 255 x -128 twice leaves int16 (saturates without VNNI)."""


def _case(tmp_path, w: np.ndarray, *, mean: bool = True, name: str = "model"):
    data = _model(w, mean=mean)
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(data)
    model = load_model_bytes(data)
    # without the mean: the integers 0 to 255 (the range [0, 255], exact steps)
    x = _means_on_half_steps() if mean else np.arange(ROWS * K).reshape(ROWS, K) % 256
    inputs = {"x": x.astype(np.float32)}
    return path, model, inputs, run_model(model, inputs)


def _explain(path, model, inputs, outputs, computed=None):
    plain = run_onnxruntime(path, inputs, optimized=False)
    return explain_difference(path, model, inputs, outputs, computed=computed,
                              plain_equal=compare_outputs(outputs, plain).equal_fraction == 1.0)


def test_quantizer_inputs_are_the_computed_float_inputs(tmp_path):
    _, model, _, _ = _case(tmp_path, UNSIGNED)
    assert quantizer_inputs(model, {"m", "q"}) == ["m"]
    assert quantizer_inputs(model, {"q"}) == []


def test_no_computed_quantizer_input_is_never_float_rounding(tmp_path):
    # the quantization reads the graph input: onnxruntime agrees, and nothing can be blamed
    data = _model(UNSIGNED, mean=False)
    proto = onnx.load_from_string(data)
    del proto.graph.node[0]
    proto.graph.node[0].input[0] = "x"
    (tmp_path / "direct.onnx").write_bytes(proto.SerializeToString())
    model = load_model_bytes(proto.SerializeToString())
    inputs = {"x": np.arange(ROWS * K, dtype=np.float32).reshape(ROWS, K) % 256}
    assert compare_outputs(run_model(model, inputs),
                           run_onnxruntime(tmp_path / "direct.onnx", inputs)).equal_fraction == 1
    assert quantizer_inputs(model, {"q", "acc", "accf", "y"}) == []
    assert not float_rounding_explains(proto.SerializeToString(), tmp_path, model, inputs,
                                       optimized=True)  # fmt: skip


def test_float_rounding_before_a_dynamic_quantization(tmp_path):
    path, model, inputs, ours = _case(tmp_path, UNSIGNED)
    theirs = run_onnxruntime(path, inputs)
    assert compare_outputs(ours, theirs).equal_fraction < 1.0  # whole steps differ
    assert float_rounding_explains(path.read_bytes(), tmp_path, model, inputs, optimized=True)
    assert float_rounding_explains(path.read_bytes(), tmp_path, model, inputs, optimized=False)
    assert _explain(path, model, inputs, ours).kind == "float_rounding"


def test_saturation_and_float_rounding_together(tmp_path):
    path, model, inputs, ours = _case(tmp_path, SIGNED)
    explanation = _explain(path, model, inputs, ours)
    if onnxruntime_saturates():  # float rounding alone does not explain it
        assert not float_rounding_explains(path.read_bytes(), tmp_path, model, inputs,
                                           optimized=True)  # fmt: skip
        assert explanation.kind == "saturation+float_rounding"
        assert explanation.layers == ("mm",)
    else:
        assert explanation.kind == "float_rounding"


@pytest.mark.skipif(not onnxruntime_saturates(), reason="onnxruntime sums exactly here")
def test_exact_float_ops_with_saturation_are_saturation_only(tmp_path):
    path, model, inputs, ours = _case(tmp_path, SIGNED, mean=False)
    assert compare_outputs(ours, run_onnxruntime(path, inputs)).equal_fraction < 1.0
    assert _explain(path, model, inputs, ours).kind == "saturation"


def test_exact_float_ops_are_not_called_float_rounding(tmp_path):
    # a bug our reference shares (one weight changed): the simulation equals its reference,
    # onnxruntime's float inputs equal ours exactly, and the steps still differ
    path, model, inputs, _ = _case(tmp_path, UNSIGNED, mean=False)
    wrong_weights = UNSIGNED.copy()
    wrong_weights[3, 1] += 1
    buggy = load_model_bytes(_model(wrong_weights, mean=False))
    outputs = run_model(buggy, inputs)
    assert not float_rounding_explains(path.read_bytes(), tmp_path, buggy, inputs,
                                       optimized=True)  # fmt: skip
    assert _explain(path, model, inputs, outputs, computed=buggy).kind == "unexplained"


def test_a_changed_output_stays_unexplained(tmp_path):
    path, model, inputs, ours = _case(tmp_path, UNSIGNED)
    wrong = {name: value.copy() for name, value in ours.items()}
    wrong["y"][5, 2] += 16.0  # what a simulation bug would give: not our reference's output
    assert _explain(path, model, inputs, wrong).kind == "unexplained"


def test_a_bug_after_the_rounding_stays_unexplained(tmp_path):
    # the float inputs differ by rounding, but our reference's weights differ too
    path, model, inputs, _ = _case(tmp_path, UNSIGNED)
    wrong_weights = UNSIGNED.copy()
    wrong_weights[0, 0] = 3
    buggy = load_model_bytes(_model(wrong_weights))
    outputs = run_model(buggy, inputs)
    assert _explain(path, model, inputs, outputs, computed=buggy).kind == "unexplained"
