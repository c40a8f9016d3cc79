"""QDQ fusion and PTQ of batched and attention-style MatMuls: both factors computed (fused
with any per-tensor zero points) and batched constant weights; the fused integer graph
against the QDQ graph run in float."""

import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .model_builder import build, node

Y_SCALE, Y_ZP = np.float32(0.05), np.uint8(100)


def attention_model(a_zp: int, b_zp: int, dtype: type = np.uint8):
    """a, b -> Q -> DQ (zero points given) -> MatMul(a, Transpose(b)) -> Q -> DQ -> y, the
    Transpose between its own DQ and Q (as onnxruntime's quantizer writes it)."""
    constants = {"as": np.float32(0.02), "az": np.array(a_zp, dtype), "bs": np.float32(0.03),
                 "bz": np.array(b_zp, dtype), "ys": Y_SCALE, "yz": Y_ZP}
    nodes = [node("QuantizeLinear", ["a", "as", "az"], ["aq"], name="qa"),
             node("DequantizeLinear", ["aq", "as", "az"], ["ad"], name="dqa"),
             node("QuantizeLinear", ["b", "bs", "bz"], ["bq"], name="qb"),
             node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], name="dqb"),
             node("Transpose", ["bd"], ["bt"], perm=[0, 1, 3, 2], name="tb"),
             node("QuantizeLinear", ["bt", "bs", "bz"], ["btq"], name="qbt"),
             node("DequantizeLinear", ["btq", "bs", "bz"], ["btd"], name="dqbt"),
             node("MatMul", ["ad", "btd"], ["c"], name="scores"),
             node("QuantizeLinear", ["c", "ys", "yz"], ["yq"], name="q_out"),
             node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq_out")]
    return build(nodes, [("a", np.float32, [1, 2, 5, 8]), ("b", np.float32, [1, 2, 6, 8])],
                 [("y", np.float32, [1, 2, 5, 6])], constants)


def feeds(r):
    return {"a": r.uniform(-2, 2, (1, 2, 5, 8)).astype(np.float32),
            "b": r.uniform(-3, 3, (1, 2, 6, 8)).astype(np.float32)}


@pytest.mark.parametrize(("a_zp", "b_zp", "dtype"), [
    (128, 128, np.uint8), (0, 0, np.int8),  # symmetric
    (120, 131, np.uint8), (0, 128, np.uint8), (-9, 5, np.int8),  # as onnxruntime quantizes
])
def test_attention_product_is_fused_and_exact(a_zp, b_zp, dtype):
    model = attention_model(a_zp, b_zp, dtype)
    fused, report = run_passes(model)
    (qmatmul,) = [n for n in fused.graph.nodes if n.op_type == "QMatMul"]
    assert (qmatmul.attrs["a_zero_point"], qmatmul.attrs["b_zero_point"]) == (a_zp, b_zp)
    assert qmatmul.inputs[1] not in {t.name for t in fused.graph.initializers}
    assert report.fate("scores").action == "fused"
    r = np.random.default_rng(3)
    for _ in range(3):
        x = feeds(r)
        diff = np.rint((run_model(fused, x)["y"] - run_model(model, x)["y"]) / Y_SCALE)
        assert np.abs(diff).max() <= 1 and np.mean(diff == 0) >= 0.95


def test_batched_constant_weights_per_column_are_fused():
    r = np.random.default_rng(4)
    w_q = r.integers(-127, 128, (2, 8, 5)).astype(np.int8)
    w_scale = np.linspace(0.01, 0.03, 5).astype(np.float32)
    constants = {"xs": np.float32(0.02), "xz": np.uint8(120), "ys": Y_SCALE, "yz": Y_ZP,
                 "wq": w_q, "ws": w_scale, "wz": np.zeros(5, np.int8)}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_in"),
             node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=2, name="dq_w"),
             node("MatMul", ["xd", "w"], ["c"], name="mm"),
             node("QuantizeLinear", ["c", "ys", "yz"], ["yq"], name="q_out"),
             node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq_out")]
    model = build(nodes, [("x", np.float32, [2, 3, 8])], [("y", np.float32, [2, 3, 5])],
                  constants)
    fused, _ = run_passes(model)
    (qmatmul,) = [n for n in fused.graph.nodes if n.op_type == "QMatMul"]
    weights = fused.graph.initializer(qmatmul.inputs[1])
    np.testing.assert_array_equal(weights.data, w_q)
    assert len(qmatmul.attrs["multiplier"]) == 5
    for _ in range(3):
        x = {"x": r.uniform(-2, 2, (2, 3, 8)).astype(np.float32)}
        diff = np.rint((run_model(fused, x)["y"] - run_model(model, x)["y"]) / Y_SCALE)
        assert np.abs(diff).max() <= 1 and np.mean(diff == 0) >= 0.9


def test_ptq_quantizes_attention_inputs_symmetric():
    r = np.random.default_rng(6)
    wq = r.standard_normal((8, 8)).astype(np.float32) * 0.3
    mix = r.standard_normal((2, 4, 3)).astype(np.float32) * 0.3
    nodes = [node("MatMul", ["x", "wq"], ["q"], name="proj"),
             node("Reshape", ["q", "shape"], ["qh"], name="split"),
             node("Transpose", ["qh"], ["qt"], perm=[0, 1, 3, 2], name="kt"),
             node("MatMul", ["qh", "qt"], ["s"], name="scores"),
             node("MatMul", ["s", "mix"], ["y"], name="mixer")]
    model = build(nodes, [("x", np.float32, [2, 4, 8])], [("y", np.float32, [1, 2, 4, 3])],
                  {"wq": wq, "mix": mix, "shape": np.array([1, 2, 4, 8], np.int64)})
    calibration = [{"x": r.standard_normal((2, 4, 8)).astype(np.float32)} for _ in range(4)]
    fused, _report = run_passes(model, calibration=calibration)
    products = {n.name: n for n in fused.graph.nodes if n.op_type == "QMatMul"}
    assert set(products) == {"proj", "scores", "mixer"}
    scores = products["scores"]
    assert (scores.attrs["a_zero_point"], scores.attrs["b_zero_point"]) == (128, 128)
    assert products["proj"].attrs["y_zero_point"] == 128  # the shared source is symmetric
    mixer_w = fused.graph.initializer(products["mixer"].inputs[1]).data
    assert mixer_w.shape == (2, 4, 3) and np.abs(mixer_w).max(axis=(0, 1)).tolist() == [127] * 3
    x = calibration[0]
    got, want = run_model(fused, x)["y"], run_model(model, x)["y"]
    assert np.abs(got - want).max() <= 0.05 * np.abs(want).max()
