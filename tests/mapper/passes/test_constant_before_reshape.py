"""constant_before_reshape: an Add/Mul of a constant on a rank-5 view (Swin's shifted-window
mask) is done before the Reshape, on the rank-4 tensor, exactly."""

import numpy as np

from systolic.mapper.passes.constant_before_reshape import constant_before_reshape
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

WINDOWS, HEADS, N = 4, 3, 5


def _report(model):  # type: ignore[no-untyped-def]
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def _swin(view=(1, WINDOWS, HEADS, N, N), op="Add"):  # type: ignore[no-untyped-def]
    """scores [nW, H, N, N] -> Reshape(view) -> op(mask [1, nW, 1, N, N]) -> Reshape back ->
    Softmax -> MatMul."""
    rng = np.random.default_rng(0)
    mask = np.where(rng.random((1, WINDOWS, 1, N, N)) < 0.3, -100.0, 0.0).astype(np.float32)
    nodes = [node("Reshape", ["scores", "view"], ["viewed"]),
             node(op, ["viewed", "mask"], ["masked"], name="masked_op"),
             node("Reshape", ["masked", "back"], ["s"]),
             node("Softmax", ["s"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["y"])]
    constants = {"view": np.array(view), "back": np.array([-1, HEADS, N, N]),
                 "mask": mask.reshape(mask.shape[-len(view):]) if len(view) < 5 else mask,
                 "v": rng.normal(0, 0.5, (N, 4)).astype(np.float32)}
    return make(nodes, [("scores", np.float32, (WINDOWS, HEADS, N, N))],
                [("y", np.float32, (WINDOWS, HEADS, N, 4))], constants, opset=17)


def _feeds(count=4):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    return [{"scores": rng.normal(0, 2, (WINDOWS, HEADS, N, N)).astype(np.float32)}
            for _ in range(count)]


def test_the_mask_is_added_to_the_rank_4_scores_exactly():  # type: ignore[no-untyped-def]
    for op in ("Add", "Mul"):
        _, model = _swin(op=op)
        moved = finalize(constant_before_reshape(model, _report(model)))
        masked = next(n for n in moved.graph.nodes if n.label == "masked_op")
        assert masked.inputs[0] == "scores"
        constant = next(t.data for t in moved.graph.initializers if t.name == masked.inputs[1])
        assert constant.shape == (WINDOWS, HEADS, N, N)
        readers = [n for n in moved.graph.nodes if masked.outputs[0] in n.inputs]
        assert [n.op_type for n in readers] == ["Reshape", "Reshape"]  # the view, and "back"
        for feed in _feeds(2):
            np.testing.assert_array_equal(run_model(moved, feed)["y"], run_model(model, feed)["y"])


def test_a_view_of_rank_4_is_left_alone():  # type: ignore[no-untyped-def]
    _, model = _swin(view=(WINDOWS, HEADS, N, N))
    assert constant_before_reshape(model, _report(model)) is model


def test_the_masked_sum_becomes_a_qadd():  # type: ignore[no-untyped-def]
    _, model = _swin()
    fused, _ = run_passes(model, calibration=_feeds())
    kinds = op_types(fused)
    assert "QAdd" in kinds and "Add" not in kinds and "QSoftmax" in kinds
    feed = _feeds(1)[0]
    ours, theirs = run_model(fused, feed)["y"], run_model(model, feed)["y"]
    cosine = float((ours * theirs).sum() / np.linalg.norm(ours) / np.linalg.norm(theirs))
    assert cosine > 0.99
