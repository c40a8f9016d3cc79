"""fuse_qdq: an Add of a constant that equals its zero point everywhere (an attention-bias
table still at its initial zeros, quantized with scale 1) beside scores of a tiny scale."""

import numpy as np

from systolic.mapper.passes.pipeline import run_passes

from .table_models import make, node, op_types, steps

AS, AZ = np.float32(3.5e-11), np.uint8(162)
YS, YZ = np.float32(3.5e-11), np.uint8(162)
SHAPE = [1, 2, 4, 4]


def bias_add_model(bias_q):
    """aq (uint8) -> DQ -> Add(DQ(bias_q, scale 1, zero point 0)) -> Q -> y (uint8)."""
    constants = {"as": AS, "az": AZ, "cs": np.float32(1.0), "cz": np.int8(0), "ys": YS,
                 "yz": YZ, "cq": bias_q}
    nodes = [node("DequantizeLinear", ["aq", "as", "az"], ["ad"]),
             node("DequantizeLinear", ["cq", "cs", "cz"], ["cd"]),
             node("Add", ["ad", "cd"], ["s"], name="add"),
             node("QuantizeLinear", ["s", "ys", "yz"], ["y"], name="q")]
    return make(nodes, [("aq", np.uint8, SHAPE)], [("y", np.uint8, SHAPE)], constants)


def test_an_all_zero_constant_is_a_qadd_equal_to_onnx():
    """Its factor 1 / 3.5e-11 is beyond the output stage (>= 2**31) but multiplies only
    zeros: a QAdd with multiplier_b 0, equal to onnx's reference and ours."""
    proto, model = bias_add_model(np.zeros(SHAPE, np.int8))
    fused, report = run_passes(model)
    assert op_types(fused) == ["QAdd"]
    assert report.fate("add").into.startswith("systolic.QAdd")
    assert fused.graph.nodes[0].attrs["multiplier_b"] == 0
    feed = {"aq": np.random.default_rng(3).integers(0, 256, SHAPE).astype(np.uint8)}
    vs_onnx, vs_ours = steps(proto, model, fused, feed)
    assert not vs_onnx.any() and not vs_ours.any()


def test_a_nonzero_constant_of_that_scale_stays_on_the_host_with_the_reason():
    """One non-zero entry: its factor counts, and the output stage cannot represent it: the
    Add stays float on the host with the QAdd's reason (not the table pass's)."""
    bias = np.zeros(SHAPE, np.int8)
    bias[0, 1, 2, 3] = 1
    _, model = bias_add_model(bias)
    fused, report = run_passes(model)
    assert "QAdd" not in op_types(fused) and "Add" in op_types(fused)
    assert report.fate("add").action == "host"
    assert "not below 2**31" in report.fate("add").reason
