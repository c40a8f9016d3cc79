import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.quantize_float import _activation_params, _symmetric_params
from systolic.reference.executor import run_model

from .model_builder import build, node

SHAPE = [1, 3, 6, 6]


def conv_weights(r, m, c):
    return (r.standard_normal((m, c, 3, 3)) * 0.3).astype(np.float32)


def conv_act_conv(body, extra=None):
    """x -> Conv (c) -> body (reads 'c', writes 'a') -> Conv -> y (float model)."""
    r = np.random.default_rng(1)
    constants = {"w1": conv_weights(r, 4, 3), "b1": np.zeros(4, np.float32),
                 "w2": conv_weights(r, 2, 4), "b2": np.zeros(2, np.float32), **(extra or {})}
    nodes = [node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1], name="conv1"), *body,
             node("Conv", ["a", "w2", "b2"], ["y"], pads=[1, 1, 1, 1], name="conv2")]
    return build(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, [1, 2, 6, 6])],
                 constants, opset=20)


def calibration(r, count=4):
    return [{"x": r.standard_normal(SHAPE).astype(np.float32)} for _ in range(count)]


def close_to_float(model, fused, r):
    for feed in calibration(r, 2):
        want = run_model(model, feed)["y"]
        got = run_model(fused, feed)["y"]
        cosine = np.dot(want.ravel(), got.ravel()) / (np.linalg.norm(want) * np.linalg.norm(got))
        assert cosine > 0.99


SILU = [node("Sigmoid", ["c"], ["s"], name="sig"), node("Mul", ["c", "s"], ["a"], name="mul")]
GELU = [node("Div", ["c", "sqrt2"], ["d"], name="div"), node("Erf", ["d"], ["e"], name="erf"),
        node("Add", ["e", "one"], ["p"], name="add"), node("Mul", ["c", "p"], ["m"], name="mul"),
        node("Mul", ["m", "half"], ["a"], name="half_mul")]
GELU_CONSTANTS = {"sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)}


@pytest.mark.parametrize(("body", "extra"), [
    (SILU, None),
    (GELU, GELU_CONSTANTS),
    ([node("HardSwish", ["c"], ["a"], name="hs")], None),
    ([node("Mish", ["c"], ["a"], name="mish")], None),
    ([node("Gelu", ["c"], ["a"], name="gelu")], None),
    ([node("Tanh", ["c"], ["a"], name="tanh")], None),
    ([node("LeakyRelu", ["c"], ["a"], alpha=0.2, name="lrelu")], None),
])
def test_activation_region_of_a_float_model_becomes_a_table(body, extra):
    model = conv_act_conv(body, extra)
    r = np.random.default_rng(2)
    fused, report = run_passes(model, calibration=calibration(r))
    kinds = [n.op_type for n in fused.graph.nodes]
    assert kinds == ["QuantizeLinear", "QConv", "QTable", "QConv", "DequantizeLinear"], kinds
    table = fused.graph.nodes[2]
    for member in body:
        assert report.fate(member.name).into == f"systolic.QTable {table.name!r}"
    close_to_float(model, fused, r)


def test_squeeze_excitation_scaling_becomes_qmul():
    r = np.random.default_rng(3)
    constants = {"w1": conv_weights(r, 4, 3), "b1": np.zeros(4, np.float32),
                 "wr": (r.standard_normal((2, 4, 1, 1)) * 0.5).astype(np.float32),
                 "we": (r.standard_normal((4, 2, 1, 1)) * 0.5).astype(np.float32),
                 "w2": conv_weights(r, 2, 4), "b2": np.zeros(2, np.float32)}
    nodes = [node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
             node("GlobalAveragePool", ["c"], ["g"], name="gap"),
             node("Conv", ["g", "wr"], ["sr"], name="reduce"),
             node("Relu", ["sr"], ["srr"], name="relu"),
             node("Conv", ["srr", "we"], ["se"], name="expand"),
             node("HardSigmoid", ["se"], ["gate"], name="hsig"),
             node("Mul", ["c", "gate"], ["a"], name="scale"),
             node("Conv", ["a", "w2", "b2"], ["y"], pads=[1, 1, 1, 1], name="conv2")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, [1, 2, 6, 6])],
                  constants, opset=20)
    fused, report = run_passes(model, calibration=calibration(r))
    kinds = [n.op_type for n in fused.graph.nodes]
    assert kinds.count("QMul") == 1 and kinds.count("QTable") == 1, kinds
    assert not {"Mul", "HardSigmoid"} & set(kinds)
    assert report.fate("scale").into.startswith("systolic.QMul")
    assert report.fate("hsig").into.startswith("systolic.QTable")
    close_to_float(model, fused, r)


def test_region_with_two_results_read_outside_stays_float_with_the_reason():
    r = np.random.default_rng(4)
    constants = {"w1": conv_weights(r, 4, 3), "b1": np.zeros(4, np.float32)}
    nodes = [node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
             node("Sigmoid", ["c"], ["s"], name="sig"),
             node("Tanh", ["s"], ["t"], name="tanh")]
    model = build(nodes, [("x", np.float32, SHAPE)],
                  [("s", np.float32, [1, 4, 6, 6]), ("t", np.float32, [1, 4, 6, 6])],
                  constants, opset=20)
    fused, report = run_passes(model, calibration=calibration(r))
    assert "QTable" not in [n.op_type for n in fused.graph.nodes]
    assert report.fate("sig").action == "host"
    assert report.fate("sig").reason == (
        "its element-wise region (2 nodes) has 2 results read outside it, not one: it is "
        "not one table and stays float")


@pytest.mark.parametrize(("low", "high"), [(0.0, 0.0), (0.0, 1e-40), (-1e-40, 0.0)])
def test_degenerate_ranges_get_scale_one_and_zero_point_zero(low, high):
    assert _activation_params(low, high) == (np.float32(1.0), np.uint8(0))
    assert _symmetric_params(low, high)[0] == np.float32(1.0)


def test_a_normal_range_keeps_its_scale():
    scale, zero = _activation_params(-1.0, 3.0)
    assert scale == np.float32(4.0 / 255) and zero == 64
