"""computed_integer_product: a MatMulInteger of two computed tensors with run-time (or
constant) zero points becomes QMatMulInt plus the host's int32 correction, bit-exact."""

import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .model_builder import build, node


def dynamic_product(b_type, opset: int = 13):
    """a, b -> DynamicQuantizeLinear (a) / QuantizeLinear or DynamicQuantizeLinear (b) ->
    MatMulInteger with both zero points -> int32 y (the attention product of quantize_dynamic
    with MatMulConstBOnly=False)."""
    nodes = [node("DynamicQuantizeLinear", ["a"], ["aq", "as", "az"], name="dqa")]
    constants = {}
    if b_type == "dynamic":
        nodes.append(node("DynamicQuantizeLinear", ["b"], ["bq", "bs", "bz"], name="dqb"))
    else:  # int8 with a constant zero point
        constants = {"bs": np.float32(0.02), "bz": np.int8(-6)}
        nodes.append(node("QuantizeLinear", ["b", "bs", "bz"], ["bq"], name="qb"))
    nodes.append(node("MatMulInteger", ["aq", "bq", "az", "bz"], ["y"], name="mmi"))
    return build(nodes, [("a", np.float32, [1, 2, 5, 8]), ("b", np.float32, [1, 2, 8, 6])],
                 [("y", np.int32, [1, 2, 5, 6])], constants, opset=opset)


@pytest.mark.parametrize("b_type", ["dynamic", "int8"])
@pytest.mark.parametrize("opset", [11, 13])
def test_the_product_runs_as_qmatmulint_and_the_correction_is_exact(b_type, opset):
    model = dynamic_product(b_type, opset)
    fused, report = run_passes(model)
    ops = [n.op_type for n in fused.graph.nodes]
    assert ops.count("QMatMulInt") == 1 and "MatMulInteger" not in ops
    assert report.fate("mmi").action == "fused"
    r = np.random.default_rng(opset)
    for _ in range(3):
        feeds = {"a": r.uniform(-1, 3, (1, 2, 5, 8)).astype(np.float32),
                 "b": r.uniform(-2, 1, (1, 2, 8, 6)).astype(np.float32)}
        want = run_model(model, feeds)["y"]
        assert np.abs(want).max() > 1000
        np.testing.assert_array_equal(run_model(fused, feeds)["y"], want)


def test_a_one_dimensional_a_stays_on_the_host():
    nodes = [node("DynamicQuantizeLinear", ["a"], ["aq", "as", "az"], name="dqa"),
             node("DynamicQuantizeLinear", ["b"], ["bq", "bs", "bz"], name="dqb"),
             node("MatMulInteger", ["aq", "bq", "az", "bz"], ["y"], name="mmi")]
    model = build(nodes, [("a", np.float32, [8]), ("b", np.float32, [8, 6])],
                  [("y", np.int32, [6])], {})
    _, report = run_passes(model)
    assert report.fate("mmi").action == "host"
    assert report.fate("mmi").reason == ("the inputs are not computed 8-bit tensors of static "
                                         "rank >= 2")
