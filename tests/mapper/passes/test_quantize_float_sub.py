"""quantize_float: a Sub of two computed tensors of one shape in a float model (YOLOv8's box
decode x2y2 - x1y1, then * stride) is quantized like an Add (fuse_qdq makes the QAdd with
multiplier_b negated) instead of staying float with what reads it."""

import numpy as np

from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

SHAPE = (1, 2, 12)


def _difference():  # type: ignore[no-untyped-def]
    """y = (x @ w1 - x @ w2) * 8."""
    rng = np.random.default_rng(9)
    nodes = [node("MatMul", ["x", "w1"], ["a"]), node("MatMul", ["x", "w2"], ["b"]),
             node("Sub", ["a", "b"], ["d"], name="sub"), node("Mul", ["d", "stride"], ["y"])]
    constants = {"w1": rng.normal(0, 0.3, (12, 12)).astype(np.float32),
                 "w2": rng.normal(0.2, 0.3, (12, 12)).astype(np.float32),
                 "stride": np.array(8.0, np.float32)}
    return make(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, SHAPE)], constants,
                opset=13)[1]


def test_a_sub_of_two_computed_tensors_is_a_qadd():  # type: ignore[no-untyped-def]
    model = _difference()
    fused, _ = run_passes(model)
    kinds = op_types(fused)
    assert "QAdd" in kinds and not {"Sub", "Mul"} & set(kinds)
    feed = {"x": np.random.default_rng(1).normal(0, 1, SHAPE).astype(np.float32)}
    want, got = run_model(model, feed)["y"], run_model(fused, feed)["y"]
    step = np.ptp(want) / 255  # one output quantization step, about
    assert np.max(np.abs(got - want)) < 4 * step
