"""sub_constant: a Sub of a whole-tensor float constant (YOLOv8's anchors - distances) becomes an
Add of it, bit-identical in float, and once quantized a QAdd of a constant in memory (and an
activation table for Neg) instead of a float Sub on the host; scalar and per-channel constants
stay Subs."""

import numpy as np

from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.mapper.passes.sub_constant import sub_constant_to_add
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

SHAPE = (1, 2, 12)  # [batch, xy, anchors]


def _sub(constant_first, constant):  # type: ignore[no-untyped-def]
    """y = x @ w - C (or C - x @ w): the product makes the operand computed."""
    inputs = ["c", "r"] if constant_first else ["r", "c"]
    nodes = [node("MatMul", ["x", "w"], ["r"]), node("Sub", inputs, ["y"], name="sub")]
    w = np.random.default_rng(2).normal(0, 0.3, (SHAPE[-1], SHAPE[-1])).astype(np.float32)
    return make(nodes, [("x", np.float32, SHAPE)], [("y", np.float32, SHAPE)],
                {"c": constant, "w": w}, opset=13)[1]


def _grid():  # type: ignore[no-untyped-def]
    """Anchor points (i + 0.5) per column, as YOLOv8's make_anchors: [1, 2, 12] -> [2, 12]."""
    return np.stack([np.arange(12) + 0.5, np.arange(12)[::-1] + 0.5]).astype(np.float32)


def _feed():  # type: ignore[no-untyped-def]
    return {"x": np.random.default_rng(3).normal(0, 3, SHAPE).astype(np.float32)}


def test_both_orders_become_adds_with_the_same_float_values():  # type: ignore[no-untyped-def]
    for constant_first in (False, True):
        model = _sub(constant_first, _grid())
        rewritten = finalize(sub_constant_to_add(model, PassReport()))
        kinds = op_types(rewritten)
        assert "Sub" not in kinds and "Add" in kinds
        assert ("Neg" in kinds) == constant_first
        np.testing.assert_array_equal(run_model(rewritten, _feed())["y"],
                                      run_model(model, _feed())["y"])


def test_scalar_and_per_channel_constants_stay():  # type: ignore[no-untyped-def]
    for constant in (np.array(1.5, np.float32), np.ones((1, 2, 1), np.float32)):
        model = _sub(True, constant)
        assert sub_constant_to_add(model, PassReport()) is model


def test_quantized_the_anchor_sub_leaves_the_host():  # type: ignore[no-untyped-def]
    """Through the whole pipeline the Sub is a QAdd of a constant B and a Neg table."""
    fused, _ = run_passes(_sub(True, _grid()))
    kinds = op_types(fused)
    assert "QAdd" in kinds and "QTable" in kinds and not {"Sub", "Neg", "Add"} & set(kinds)
