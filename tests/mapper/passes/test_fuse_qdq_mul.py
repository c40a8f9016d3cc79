import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes

from .table_models import make, node, op_types, steps

AS, AZ = np.float32(0.04), np.uint8(120)
BS, BZ = np.float32(0.01), np.uint8(3)
YS, YZ = np.float32(0.03), np.uint8(50)


def mul_model(b_shape, activation=None, a_shape=(1, 4, 5, 5)):
    """aq, bq (uint8) -> DQ -> Mul -> [activation] -> Q -> y (uint8)."""
    constants = {"as": AS, "az": AZ, "bs": BS, "bz": BZ, "ys": YS, "yz": YZ,
                 "lo": np.float32(-0.5), "hi": np.float32(2.0)}
    nodes = [node("DequantizeLinear", ["aq", "as", "az"], ["ad"], name="dq_a"),
             node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], name="dq_b"),
             node("Mul", ["ad", "bd"], ["m"], name="mul")]
    last = "m"
    if activation == "Relu":
        nodes.append(node("Relu", ["m"], ["r"], name="act"))
        last = "r"
    elif activation == "Clip":
        nodes.append(node("Clip", ["m", "lo", "hi"], ["r"], name="act"))
        last = "r"
    nodes.append(node("QuantizeLinear", [last, "ys", "yz"], ["y"], name="q"))
    return make(nodes, [("aq", np.uint8, list(a_shape)), ("bq", np.uint8, list(b_shape))],
                [("y", np.uint8, list(a_shape))], constants)


def feeds(r, a_shape, b_shape):
    return {"aq": r.integers(0, 256, a_shape).astype(np.uint8),
            "bq": r.integers(0, 256, b_shape).astype(np.uint8)}


@pytest.mark.parametrize("b_shape", [(1, 4, 5, 5), (1, 4, 1, 1)])
@pytest.mark.parametrize("activation", [None, "Relu", "Clip"])
def test_product_of_two_quantized_tensors_becomes_qmul(b_shape, activation):
    proto, model = mul_model(b_shape, activation)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QMul"]
    mul = fused.graph.nodes[0]
    assert (mul.attrs["a_zero_point"], mul.attrs["b_zero_point"]) == (AZ, BZ)
    assert report.fate("mul").into == "systolic.QMul 'mul'"
    if activation:
        assert report.fate("act").action == "fused"
    r = np.random.default_rng(4)
    for _ in range(3):
        vs_onnx, vs_ours = steps(proto, model, fused, feeds(r, (1, 4, 5, 5), b_shape))
        # QMul rounds the exact product once; the float graph rounds s_a*s_b*(a-z)(b-z)/s_y
        # in float32: a product within an ulp of a half step may differ by one step.
        assert np.abs(vs_onnx).max() <= 1 and np.abs(vs_ours).max() <= 1
        assert np.mean(vs_onnx == 0) >= 0.99


def test_per_channel_operand_first_is_swapped():
    constants = {"as": AS, "az": AZ, "bs": BS, "bz": BZ, "ys": YS, "yz": YZ}
    nodes = [node("DequantizeLinear", ["aq", "as", "az"], ["ad"]),
             node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"]),
             node("Mul", ["bd", "ad"], ["m"], name="mul"),
             node("QuantizeLinear", ["m", "ys", "yz"], ["y"], name="q")]
    proto, model = make(nodes, [("aq", np.uint8, [2, 3, 4, 4]), ("bq", np.uint8, [2, 3, 1, 1])],
                        [("y", np.uint8, [2, 3, 4, 4])], constants)
    fused, _ = run_passes(model)
    assert op_types(fused) == ["QMul"] and fused.graph.nodes[0].inputs == ("aq", "bq")
    r = np.random.default_rng(5)
    vs_onnx, _ = steps(proto, model, fused, feeds(r, (2, 3, 4, 4), (2, 3, 1, 1)))
    assert np.abs(vs_onnx).max() <= 1


def test_other_broadcasts_stay_on_the_host_with_the_reason():
    _proto, model = mul_model((1, 1, 5, 5))
    fused, report = run_passes(model)
    assert "QMul" not in op_types(fused)
    assert report.fate("mul").reason == (
        "the Mul's inputs [1, 4, 5, 5] and [1, 1, 5, 5] are neither the same shape nor one "
        "per channel [N|1, C, 1, ...] or along the last axis [1, ..., H] of the other")


def test_mul_by_a_per_channel_constant_is_a_qmul():
    """A batch norm's scale [1, C, 1, 1] read through a DequantizeLinear: QMul, B per channel
    (broadcast by the ADD's b_broadcast, one row per channel chunk)."""
    constants = {"as": AS, "az": AZ, "ys": YS, "yz": YZ,
                 "wq": np.arange(4, dtype=np.uint8).reshape(1, 4, 1, 1)}
    nodes = [node("DequantizeLinear", ["aq", "as", "az"], ["ad"]),
             node("DequantizeLinear", ["wq", "as", "az"], ["wd"]),
             node("Mul", ["ad", "wd"], ["m"], name="mul"),
             node("QuantizeLinear", ["m", "ys", "yz"], ["y"], name="q")]
    _, model = make(nodes, [("aq", np.uint8, [1, 4, 2, 2])], [("y", np.uint8, [1, 4, 2, 2])],
                    constants)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QMul"]
    assert report.fate("mul").into.startswith("systolic.QMul")
    b = {t.name: t for t in fused.graph.initializers}[fused.graph.nodes[0].inputs[1]]
    assert b.data.shape == (1, 4, 1, 1)


def test_mul_by_a_constant_of_the_operands_shape_is_a_qmul_equal_to_onnx():
    """A rotary embedding's cos table [1, H, S, D] (expanded over the heads) read through a
    DequantizeLinear: QMul with B a constant in memory, as QAdd's position embedding; within
    one output step of onnx's reference (one rounding), equal to ours."""
    r = np.random.default_rng(5)
    constants = {"as": AS, "az": AZ, "bs": BS, "bz": BZ, "ys": YS, "yz": YZ,
                 "cq": r.integers(0, 256, (1, 2, 3, 4)).astype(np.uint8)}
    nodes = [node("DequantizeLinear", ["aq", "as", "az"], ["ad"]),
             node("DequantizeLinear", ["cq", "bs", "bz"], ["cd"]),
             node("Mul", ["ad", "cd"], ["m"], name="mul"),
             node("QuantizeLinear", ["m", "ys", "yz"], ["y"], name="q")]
    proto, model = make(nodes, [("aq", np.uint8, [1, 2, 3, 4])], [("y", np.uint8, [1, 2, 3, 4])],
                        constants)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QMul"]
    assert report.fate("mul").into.startswith("systolic.QMul")
    b = {t.name: t for t in fused.graph.initializers}[fused.graph.nodes[0].inputs[1]]
    np.testing.assert_array_equal(b.data, constants["cq"])
    feed = {"aq": r.integers(0, 256, (1, 2, 3, 4)).astype(np.uint8)}
    vs_onnx, vs_ours = steps(proto, model, fused, feed)
    assert np.abs(vs_onnx).max() <= 1 and np.abs(vs_ours).max() <= 1
