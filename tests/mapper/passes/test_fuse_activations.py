import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .model_builder import build, node


def qlinear_conv_then(activation, clip=(0.0, 6.0), requant_scale=0.05):
    """QLinearConv -> DequantizeLinear -> activation -> QuantizeLinear -> DequantizeLinear."""
    r = np.random.default_rng(8)
    constants = {"xs": np.float32(0.02), "xz": np.uint8(100), "ws": np.float32(0.01),
                 "wz": np.int8(0), "ys": np.float32(0.05), "yz": np.uint8(60),
                 "qs": np.float32(requant_scale), "w": r.integers(-90, 91, (3, 2, 3, 3)).astype(np.int8),
                 "lo": np.float32(clip[0]), "hi": np.float32(clip[1])}
    act = (node("Relu", ["d"], ["a"], name="act") if activation == "Relu"
           else node("Clip", ["d", "lo", "hi"], ["a"], name="act"))
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_in"),
             node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["c"],
                  pads=[1, 1, 1, 1], name="conv"),
             node("DequantizeLinear", ["c", "ys", "yz"], ["d"], name="dq_mid"),
             act,
             node("QuantizeLinear", ["a", "qs", "yz"], ["aq"], name="q_mid"),
             node("DequantizeLinear", ["aq", "qs", "yz"], ["y"], name="dq_out")]
    return build(nodes, [("x", np.float32, [1, 2, 4, 4])], [("y", np.float32, [1, 3, 4, 4])],
                 constants)


@pytest.mark.parametrize(("activation", "clip", "bounds"), [
    ("Relu", (0.0, 6.0), (60, 255)),
    ("Clip", (0.0, 6.0), (60, 180)),  # 6 / 0.05 = 120 (+ 60)
    ("Clip", (-1.0, 2.0), (40, 100)),
])
def test_relu_and_clip_after_a_systolic_op_narrow_its_bounds(activation, clip, bounds):
    model = qlinear_conv_then(activation, clip)
    fused, report = run_passes(model)
    assert [n.op_type for n in fused.graph.nodes] == ["QuantizeLinear", "QConv",
                                                       "DequantizeLinear"]
    conv = fused.graph.nodes[1]
    assert (conv.attrs["y_lo"], conv.attrs["y_hi"]) == bounds
    assert {report.fate(n).action for n in ("dq_mid", "act", "q_mid")} == {"fused"}
    r = np.random.default_rng(9)
    for _ in range(3):
        x = r.uniform(-2, 3, (1, 2, 4, 4)).astype(np.float32)
        np.testing.assert_array_equal(run_model(fused, {"x": x})["y"],
                                      run_model(model, {"x": x})["y"])


def test_requantizing_activation_is_not_bounds_but_a_table():
    model = qlinear_conv_then("Relu", requant_scale=0.1)
    fused, report = run_passes(model)
    assert [n.op_type for n in fused.graph.nodes] == ["QuantizeLinear", "QConv", "QTable",
                                                       "DequantizeLinear"]
    conv = fused.graph.nodes[1]
    assert (conv.attrs["y_lo"], conv.attrs["y_hi"]) == (0, 255)
    assert report.fate("act").into == "systolic.QTable 'act'"
    x = np.random.default_rng(9).uniform(-2, 3, (1, 2, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_model(fused, {"x": x})["y"], run_model(model, {"x": x})["y"])
