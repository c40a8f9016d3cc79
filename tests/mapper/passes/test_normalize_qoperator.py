import numpy as np

from systolic.mapper.passes.normalize_qoperator import fuse_integer_requantization
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node


def compare(model, fused, shape, r, scale, *, low=-2.0, high=3.0, units=1):
    for _ in range(4):
        x = r.uniform(low, high, shape).astype(np.float32)
        diff = np.rint((run_model(fused, {"x": x})["y"] - run_model(model, {"x": x})["y"])
                       / scale)
        assert np.abs(diff).max() <= units
        assert np.mean(diff == 0) >= 0.95


def test_qlinear_matmul_with_per_column_weights():
    r = np.random.default_rng(10)
    constants = {"xs": np.float32(0.03), "xz": np.uint8(70), "ys": np.float32(0.2),
                 "yz": np.uint8(128), "b": r.integers(0, 256, (16, 6)).astype(np.uint8),
                 "bs": np.linspace(0.005, 0.01, 6).astype(np.float32),
                 "bz": np.full(6, 128, np.uint8)}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             node("QLinearMatMul", ["xq", "xs", "xz", "b", "bs", "bz", "ys", "yz"], ["m"],
                  name="mm"),
             node("DequantizeLinear", ["m", "ys", "yz"], ["y"])]
    model = build(nodes, [("x", np.float32, [3, 16])], [("y", np.float32, [3, 6])], constants)
    fused, report = run_passes(model)
    assert [n.op_type for n in fused.graph.nodes] == ["QuantizeLinear", "QMatMul",
                                                       "DequantizeLinear"]
    assert report.fate("mm").into == "systolic.QMatMul 'mm'"
    compare(model, fused, (3, 16), r, 0.2)


def test_matmul_integer_with_float_requantization():
    """fuse_integer_requantization takes the chain before channel_affine and the islands
    (which made its bias Add a QAdd of its own in session 9)."""
    r = np.random.default_rng(11)
    constants = {"xs": np.float32(0.03), "xz": np.uint8(70), "ys": np.float32(0.1),
                 "yz": np.uint8(20), "b": r.integers(-100, 101, (8, 5)).astype(np.int8),
                 "acc_scale": np.float32(0.03 * 0.01),
                 "bias": np.linspace(-0.5, 0.5, 5).astype(np.float32)}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             node("MatMulInteger", ["xq", "b", "xz"], ["acc"], name="mmi"),
             node("Cast", ["acc"], ["accf"], to=1, name="cast"),
             node("Mul", ["accf", "acc_scale"], ["scaled"], name="mul"),
             node("Add", ["scaled", "bias"], ["biased"], name="add"),
             node("Relu", ["biased"], ["act"], name="relu"),
             node("QuantizeLinear", ["act", "ys", "yz"], ["q"], name="q"),
             node("DequantizeLinear", ["q", "ys", "yz"], ["y"])]
    model = build(nodes, [("x", np.float32, [4, 8])], [("y", np.float32, [4, 5])], constants)
    fused, report = run_passes(model)
    assert [n.op_type for n in fused.graph.nodes] == ["QuantizeLinear", "QMatMul",
                                                       "DequantizeLinear"]
    assert {report.fate(n).action for n in ("mmi", "cast", "mul", "add", "relu", "q")} == {
        "fused"}
    assert fused.graph.nodes[1].attrs["y_lo"] == 20
    compare(model, fused, (4, 8), r, 0.1)


def test_fuse_integer_requantization_leaves_a_model_without_the_chain_as_it_is():
    constants = {"b": np.ones((8, 5), np.int8)}
    raw = build([node("MatMulInteger", ["x", "b"], ["y"], name="mmi")],
                [("x", np.uint8, [4, 8])], [("y", np.int32, [4, 5])], constants)
    report = PassReport((n.label, n.op_id) for n in raw.graph.nodes)
    assert fuse_integer_requantization(raw, report) is raw  # no Cast -> Mul -> Q after it
    assert report.note_of("mmi") == "'y' is a graph output"  # (the chain's first check)
    relu = build([node("Relu", ["x"], ["y"], name="relu")], [("x", np.float32, [4])],
                 [("y", np.float32, [4])])
    assert fuse_integer_requantization(relu, report) is relu


def test_matmul_integer_without_requantization_runs_raw_on_the_array():
    """No requantization after it: fuse_integer_matmul makes it a QMatMulInt (int32 out)."""
    constants = {"b": np.ones((8, 5), np.int8)}
    nodes = [node("MatMulInteger", ["x", "b"], ["y"], name="mmi")]
    model = build(nodes, [("x", np.uint8, [4, 8])], [("y", np.int32, [4, 5])], constants)
    fused, report = run_passes(model)
    assert [n.op_type for n in fused.graph.nodes] == ["QMatMulInt"]
    assert report.fate("mmi").action == "fused"
    assert "QMatMulInt" in report.fate("mmi").into


def test_qlinear_average_pool_and_integer_max_pool():
    constants = {"xs": np.float32(0.02), "xz": np.uint8(100), "ys": np.float32(0.015),
                 "yz": np.uint8(90)}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             node("MaxPool", ["xq"], ["mp"], kernel_shape=[2, 2], strides=[2, 2],
                  ceil_mode=1, name="maxpool"),
             node("QLinearAveragePool", ["mp", "xs", "xz", "ys", "yz"], ["ap"],
                  domain="com.microsoft", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                  name="avgpool"),
             node("DequantizeLinear", ["ap", "ys", "yz"], ["y"])]
    model = build(nodes, [("x", np.float32, [1, 2, 7, 7])], [("y", np.float32, [1, 2, 4, 4])],
                  constants, ms=True)
    fused, report = run_passes(model)
    assert [n.op_type for n in fused.graph.nodes] == ["QuantizeLinear", "QMaxPool",
                                                       "QAveragePool", "DequantizeLinear"]
    assert fused.graph.nodes[1].attrs["pads"] == (0, 0, 1, 1)  # ceil_mode as end padding
    assert report.fate("maxpool").action == "fused"
    compare(model, fused, (1, 2, 7, 7), np.random.default_rng(12), 0.015)


def two_input_diff(model, fused, shapes, r, scale):
    """Return the output differences in steps of `scale` over four random feeds."""
    diffs = []
    for _ in range(4):
        feeds = {name: r.uniform(-2, 2, shape).astype(np.float32) for name, shape in shapes}
        got, want = run_model(fused, feeds)["y"], run_model(model, feeds)["y"]
        diffs.append(np.rint((got - want) / scale))
    return np.concatenate([d.ravel() for d in diffs])


def test_qlinear_matmul_of_two_computed_tensors_with_asymmetric_zero_points():
    """Attention as onnxruntime's QOperator format writes it (uint8 zero points 123, 131)."""
    constants = {"as": np.float32(0.02), "az": np.uint8(123), "bs": np.float32(0.03),
                 "bz": np.uint8(131), "ys": np.float32(0.05), "yz": np.uint8(100)}
    nodes = [node("QuantizeLinear", ["a", "as", "az"], ["aq"]),
             node("QuantizeLinear", ["b", "bs", "bz"], ["bq"]),
             node("QLinearMatMul", ["aq", "as", "az", "bq", "bs", "bz", "ys", "yz"], ["m"],
                  name="scores"),
             node("DequantizeLinear", ["m", "ys", "yz"], ["y"])]
    shapes = [("a", [1, 2, 5, 8]), ("b", [1, 2, 8, 6])]
    model = build(nodes, [(name, np.float32, shape) for name, shape in shapes],
                  [("y", np.float32, [1, 2, 5, 6])], constants)
    fused, report = run_passes(model)
    (product,) = [n for n in fused.graph.nodes if n.op_type == "QMatMul"]
    assert (product.attrs["a_zero_point"], product.attrs["b_zero_point"]) == (123, 131)
    assert report.fate("scores").action == "fused"
    diff = two_input_diff(model, fused, shapes, np.random.default_rng(12), 0.05)
    assert np.abs(diff).max() <= 1 and np.mean(diff == 0) >= 0.95


def test_matmul_integer_of_two_computed_tensors_with_constant_zero_points():
    constants = {"as": np.float32(0.02), "az": np.uint8(110), "bs": np.float32(0.03),
                 "bz": np.int8(-7), "acc_scale": np.float32(0.02 * 0.03),
                 "ys": np.float32(0.05), "yz": np.uint8(90)}
    nodes = [node("QuantizeLinear", ["a", "as", "az"], ["aq"]),
             node("QuantizeLinear", ["b", "bs", "bz"], ["bq"]),
             node("MatMulInteger", ["aq", "bq", "az", "bz"], ["acc"], name="mmi"),
             node("Cast", ["acc"], ["accf"], to=1),
             node("Mul", ["accf", "acc_scale"], ["scaled"]),
             node("QuantizeLinear", ["scaled", "ys", "yz"], ["q"]),
             node("DequantizeLinear", ["q", "ys", "yz"], ["y"])]
    shapes = [("a", [2, 4, 8]), ("b", [2, 8, 3])]
    model = build(nodes, [(name, np.float32, shape) for name, shape in shapes],
                  [("y", np.float32, [2, 4, 3])], constants)
    fused, report = run_passes(model)
    (product,) = [n for n in fused.graph.nodes if n.op_type == "QMatMul"]
    assert (product.attrs["a_zero_point"], product.attrs["b_zero_point"]) == (110, -7)
    assert report.fate("mmi").action == "fused"
    diff = two_input_diff(model, fused, shapes, np.random.default_rng(13), 0.05)
    assert np.abs(diff).max() <= 1 and np.mean(diff == 0) >= 0.95
