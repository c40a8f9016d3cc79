import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .model_builder import build, node

X_SCALE, X_ZP = np.float32(0.02), np.uint8(120)
Y_SCALE, Y_ZP = np.float32(0.05), np.uint8(10)


def qdq_conv_model(w_q, w_scale, w_zp, activation=None, clip=(0.0, 6.0)):
    """x -> Q -> DQ -> Conv(DQ(w), bias) -> [activation] -> Q -> DQ -> y."""
    m = w_q.shape[0]
    constants = {"xs": X_SCALE, "xz": X_ZP, "ys": Y_SCALE, "yz": Y_ZP, "wq": w_q,
                 "ws": w_scale, "wz": w_zp,
                 "b": np.linspace(-0.3, 0.4, m).astype(np.float32),
                 "lo": np.float32(clip[0]), "hi": np.float32(clip[1])}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_in"),
             node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_in"),
             node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0, name="dq_w"),
             node("Conv", ["xd", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv")]
    last = "c"
    if activation == "Relu":
        nodes.append(node("Relu", ["c"], ["a"], name="act"))
        last = "a"
    elif activation == "Clip":
        nodes.append(node("Clip", ["c", "lo", "hi"], ["a"], name="act"))
        last = "a"
    nodes += [node("QuantizeLinear", [last, "ys", "yz"], ["yq"], name="q_out"),
              node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq_out")]
    return build(nodes, [("x", np.float32, [1, 3, 5, 5])], [("y", np.float32, [1, m, 5, 5])],
                 constants)


def per_channel_uint8_weights(r):
    zp = np.array([128, 100, 140, 90], np.uint8)
    diff = r.integers(-90, 91, (4, 3, 3, 3))
    return (diff + zp.reshape(-1, 1, 1, 1)).astype(np.uint8), diff, zp


def qconv_of(model):
    return next(n for n in model.graph.nodes if n.op_type == "QConv")


def check_close(original, fused, r, units=1):
    for _ in range(3):
        x = r.uniform(-2, 3, (1, 3, 5, 5)).astype(np.float32)
        want = run_model(original, {"x": x})["y"]
        got = run_model(fused, {"x": x})["y"]
        diff = np.rint((got - want) / Y_SCALE)
        assert np.abs(diff).max() <= units
        assert np.mean(diff == 0) >= 0.9


def test_per_channel_weight_zero_points_are_subtracted():
    r = np.random.default_rng(5)
    w_q, diff, zp = per_channel_uint8_weights(r)
    scale = np.array([0.01, 0.02, 0.015, 0.03], np.float32)
    model = qdq_conv_model(w_q, scale, zp)
    fused, report = run_passes(model)
    conv = qconv_of(fused)
    weights = fused.graph.initializer(conv.inputs[1])
    assert weights.data.dtype == np.int8
    np.testing.assert_array_equal(weights.data, diff)
    bias = fused.graph.initializer(conv.inputs[2])
    want_bias = np.rint(np.linspace(-0.3, 0.4, 4) / (np.float64(X_SCALE) * scale))
    np.testing.assert_array_equal(bias.data, want_bias.astype(np.int32))
    assert conv.attrs["x_zero_point"] == X_ZP and conv.attrs["y_zero_point"] == Y_ZP
    assert report.fate("conv").into == "systolic.QConv 'conv'"
    assert report.fate("dq_w").action == "fused"
    check_close(model, fused, r)


def test_weights_that_do_not_fit_eight_bits_stay_on_the_host():
    w_q = np.zeros((2, 3, 3, 3), np.uint8)
    w_q[0, 0, 0, 0] = 255  # 255 - 0 does not fit int8
    model = qdq_conv_model(w_q, np.array([0.01, 0.01], np.float32), np.zeros(2, np.uint8))
    fused, report = run_passes(model)
    assert "QConv" not in [n.op_type for n in fused.graph.nodes]
    fate = report.fate("conv")
    assert fate.action == "host"
    assert fate.reason.startswith("weights minus their zero point span [0, 255]")


@pytest.mark.parametrize(("activation", "bounds"), [
    (None, (0, 255)),
    ("Relu", (10, 255)),  # clamp at the output zero point
    ("Clip", (10, 130)),  # round(0 / 0.05) + 10, round(6 / 0.05) + 10
])
def test_activation_becomes_output_bounds(activation, bounds):
    r = np.random.default_rng(6)
    w_q = r.integers(-100, 101, (4, 3, 3, 3)).astype(np.int8)
    model = qdq_conv_model(w_q, np.full(4, 0.01, np.float32), np.zeros(4, np.int8), activation)
    fused, report = run_passes(model)
    conv = qconv_of(fused)
    assert (conv.attrs["y_lo"], conv.attrs["y_hi"]) == bounds
    if activation:
        assert report.fate("act").action == "fused"
    check_close(model, fused, r)


def test_clip_bounds_are_quantized_like_quantize_linear():
    r = np.random.default_rng(7)
    w_q = r.integers(-100, 101, (4, 3, 3, 3)).astype(np.int8)
    # -0.5 / 0.05 = -10 -> 0; 1.03 / 0.05 = 20.6 -> 21 (+ 10)
    model = qdq_conv_model(w_q, np.full(4, 0.01, np.float32), np.zeros(4, np.int8), "Clip",
                           clip=(-0.5, 1.03))
    conv = qconv_of(run_passes(model)[0])
    assert (conv.attrs["y_lo"], conv.attrs["y_hi"]) == (0, 31)
