"""fuse_qdq: an element-wise Mul / Add whose second operand is a vector along the first's last
axis (LayerNorm's affine part x_hat * gamma + beta), computed or an 8-bit constant."""

import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes

from .table_models import make, node, op_types, steps

AS, AZ = np.float32(0.04), np.uint8(120)
BS, BZ = np.float32(0.01), np.int8(3)
YS, YZ = np.float32(0.03), np.uint8(50)
A_SHAPE = (2, 5, 24)


def affine_model(op, b_shape, *, constant, first="a"):  # type: ignore[no-untyped-def]
    """aq (uint8) -> DQ, bq (int8, a constant or an input) -> DQ -> op -> Q -> y (uint8)."""
    constants = {"as": AS, "az": AZ, "bs": BS, "bz": BZ, "ys": YS, "yz": YZ}
    inputs = [("aq", np.uint8, list(A_SHAPE))]
    if constant:
        values = np.random.default_rng(1).integers(-128, 128, b_shape)
        constants["bq"] = values.astype(np.int8)
    else:
        inputs.append(("bq", np.int8, list(b_shape)))
    operands = ["ad", "bd"] if first == "a" else ["bd", "ad"]
    nodes = [node("DequantizeLinear", ["aq", "as", "az"], ["ad"], name="dq_a"),
             node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], name="dq_b"),
             node(op, operands, ["m"], name="op"),
             node("QuantizeLinear", ["m", "ys", "yz"], ["y"], name="q")]
    return make(nodes, inputs, [("y", np.uint8, list(A_SHAPE))], constants)


def _feeds(seed, b_shape, constant):  # type: ignore[no-untyped-def]
    r = np.random.default_rng(seed)
    feeds = {"aq": r.integers(0, 256, A_SHAPE).astype(np.uint8)}
    if not constant:
        feeds["bq"] = r.integers(-128, 128, b_shape).astype(np.int8)
    return feeds


@pytest.mark.parametrize("op,fused_op", [("Mul", "QMul"), ("Add", "QAdd")])
@pytest.mark.parametrize("b_shape", [(24,), (1, 24), (1, 1, 24)])
@pytest.mark.parametrize("constant", [True, False], ids=["constant", "computed"])
@pytest.mark.parametrize("first", ["a", "b"])
def test_vector_along_the_last_axis_is_fused(op, fused_op, b_shape, constant, first):  # type: ignore[no-untyped-def]
    proto, model = affine_model(op, b_shape, constant=constant, first=first)
    fused, report = run_passes(model)
    assert op_types(fused) == [fused_op]
    assert fused.graph.nodes[0].inputs == ("aq", "bq")  # the vector second (b_broadcast)
    assert report.fate("op").into == f"systolic.{fused_op} 'op'"
    for seed in range(2):
        vs_onnx, vs_ours = steps(proto, model, fused, _feeds(seed, b_shape, constant))
        assert np.abs(vs_onnx).max() <= 1 and np.abs(vs_ours).max() <= 1
        assert np.mean(vs_onnx == 0) >= 0.99


@pytest.mark.parametrize("op", ["Mul", "Add"])
def test_other_constants_are_refused_with_the_reason(op):  # type: ignore[no-untyped-def]
    _proto, model = affine_model(op, (2, 5, 1), constant=True)
    fused, report = run_passes(model)
    assert f"Q{op}" not in op_types(fused)
    reason = report.fate("op").reason  # fuse_qdq's or fuse_tables', whichever explains more
    assert reason is not None and "constant" in reason
