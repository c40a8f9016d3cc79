import numpy as np
import onnxruntime as ort
import pytest

from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

XS, XZ = np.float32(0.06), np.uint8(128)
YS, YZ = np.float32(1 / 256), np.uint8(0)


def ort_run(proto, feed):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(proto.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feed)[0]


def lookup_model(op_type, **attrs):
    constants = {"xs": XS, "xz": XZ, "ys": YS, "yz": YZ}
    nodes = [node(op_type, ["xq", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                  name="act", **attrs)]
    return make(nodes, [("xq", np.uint8, [1, 4, 8, 8])], [("y", np.uint8, [1, 4, 8, 8])],
                constants, opset=13, ms=True)


@pytest.mark.parametrize(("op_type", "attrs"), [("QLinearSigmoid", {}),
                                                ("QLinearLeakyRelu", {"alpha": 0.1})])
def test_qlinear_lookups_become_tables(op_type, attrs):
    proto, model = lookup_model(op_type, **attrs)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QTable"]
    assert report.fate("act").into == "systolic.QTable 'act'"
    feed = {"xq": np.resize(np.arange(256), (1, 4, 8, 8)).astype(np.uint8)}
    got = run_model(fused, feed)["y"]
    np.testing.assert_array_equal(got, run_model(model, feed)["y"])  # the reference's op
    # onnxruntime's sigmoid is a polynomial approximation: within one step of it.
    assert np.abs(got.astype(int) - ort_run(proto, feed).astype(int)).max() <= 1


def mul_model(b_shape):
    constants = {"as": np.float32(0.04), "az": np.uint8(120), "bs": np.float32(0.01),
                 "bz": np.uint8(3), "cs": np.float32(0.03), "cz": np.uint8(50)}
    nodes = [node("QLinearMul", ["aq", "as", "az", "bq", "bs", "bz", "cs", "cz"], ["y"],
                  domain="com.microsoft", name="mul")]
    return make(nodes, [("aq", np.uint8, [1, 4, 5, 5]), ("bq", np.uint8, list(b_shape))],
                [("y", np.uint8, [1, 4, 5, 5])], constants, opset=13, ms=True)


@pytest.mark.parametrize("b_shape", [(1, 4, 5, 5), (1, 4, 1, 1)])
def test_qlinear_mul_becomes_qmul(b_shape):
    proto, model = mul_model(b_shape)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QMul"]
    assert report.fate("mul").into == "systolic.QMul 'mul'"
    r = np.random.default_rng(2)
    feed = {"aq": r.integers(0, 256, (1, 4, 5, 5)).astype(np.uint8),
            "bq": r.integers(0, 256, b_shape).astype(np.uint8)}
    got = run_model(fused, feed)["y"].astype(int)
    # onnxruntime requantizes in float32 (product times a float32 multiplier); QMul rounds
    # the exact product times the same multiplier (exact as (M, s)) once: a product within a
    # float32 ulp of a half step may round the other way.
    assert np.abs(got - ort_run(proto, feed).astype(int)).max() <= 1
    assert np.abs(got - run_model(model, feed)["y"].astype(int)).max() <= 1


def test_qlinear_mul_with_other_broadcast_stays_on_the_host():
    _, model = mul_model((1, 1, 5, 5))
    fused, report = run_passes(model)
    assert op_types(fused) == ["QLinearMul"]
    assert report.fate("mul").reason.startswith("the inputs [1, 4, 5, 5] and [1, 1, 5, 5] are "
                                                "neither the same shape")


def test_qlinear_softmax_becomes_qsoftmax():
    """fuse_softmax (tests/mapper/passes/test_fuse_softmax.py) takes it: SOFTMAX."""
    constants = {"xs": XS, "xz": XZ, "ys": YS, "yz": YZ}
    nodes = [node("QLinearSoftmax", ["xq", "xs", "xz", "ys", "yz"], ["y"],
                  domain="com.microsoft", name="softmax", axis=-1, opset=13)]
    _, model = make(nodes, [("xq", np.uint8, [2, 8])], [("y", np.uint8, [2, 8])], constants,
                    opset=13, ms=True)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QSoftmax"]
    assert "QSoftmax" in report.fate("softmax").into


@pytest.mark.parametrize("op_type", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("constant_first", [False, True])
def test_qlinear_binary_with_a_scalar_constant_is_a_table(op_type, constant_first):
    constants = {"as": np.float32(0.04), "az": np.uint8(120), "cq": np.uint8(200),
                 "bs": np.float32(0.01), "bz": np.uint8(100), "ys": np.float32(0.03),
                 "yz": np.uint8(50)}
    a, b = (["cq", "bs", "bz"], ["aq", "as", "az"]) if constant_first else \
        (["aq", "as", "az"], ["cq", "bs", "bz"])
    nodes = [node(op_type, [*a, *b, "ys", "yz"], ["y"], domain="com.microsoft", name="op")]
    proto, model = make(nodes, [("aq", np.uint8, [1, 4, 8, 8])], [("y", np.uint8, [1, 4, 8, 8])],
                        constants, opset=13, ms=True)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QTable"] and fused.graph.nodes[0].inputs[0] == "aq"
    assert report.fate("op").into == "systolic.QTable 'op'"
    feed = {"aq": np.resize(np.arange(256), (1, 4, 8, 8)).astype(np.uint8)}
    got = run_model(fused, feed)["y"]
    np.testing.assert_array_equal(got, run_model(model, feed)["y"])
    assert np.abs(got.astype(int) - ort_run(proto, feed).astype(int)).max() <= 1


@pytest.mark.parametrize("op_type", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("constant_first", [False, True])
def test_qlinear_binary_with_a_last_axis_constant_vector(op_type, constant_first):
    """LayerNorm's gamma (QLinearMul) and beta, a MatMul's bias (QLinearAdd, often the first
    operand): a constant [H] along the other's last axis -> QMul / QAdd (ADD mul /
    b_broadcast on the vector unit)."""
    r = np.random.default_rng(4)
    constants = {"as": np.float32(0.04), "az": np.uint8(120),
                 "cq": r.integers(0, 256, 12).astype(np.uint8), "bs": np.float32(0.01),
                 "bz": np.uint8(100), "ys": np.float32(0.03), "yz": np.uint8(50)}
    a, b = (["cq", "bs", "bz"], ["aq", "as", "az"]) if constant_first else \
        (["aq", "as", "az"], ["cq", "bs", "bz"])
    nodes = [node(op_type, [*a, *b, "ys", "yz"], ["y"], domain="com.microsoft", name="op")]
    proto, model = make(nodes, [("aq", np.uint8, [1, 6, 12])], [("y", np.uint8, [1, 6, 12])],
                        constants, opset=13, ms=True)
    fused, report = run_passes(model)
    want = "QAdd" if op_type == "QLinearAdd" else "QMul"
    assert op_types(fused) == [want] and fused.graph.nodes[0].inputs == ("aq", "cq")
    assert report.fate("op").into == f"systolic.{want} 'op'"
    feed = {"aq": r.integers(0, 256, (1, 6, 12)).astype(np.uint8)}
    got = run_model(fused, feed)["y"].astype(int)
    assert np.abs(got - run_model(model, feed)["y"].astype(int)).max() <= 1
    assert np.abs(got - ort_run(proto, feed).astype(int)).max() <= 1
