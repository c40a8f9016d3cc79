"""additive_masks: a masked_fill select of the scores before a Softmax (DeBERTa's
Where(Not(keep), lowest, scores)) becomes the scores plus an additive mask, exactly; the
later mask passes make it a table and a QAdd."""

import numpy as np
import pytest

from systolic.mapper.passes.additive_masks import additive_masks
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

HEADS, S = 2, 6
LOWEST = np.finfo(np.float32).min


def _report(model):  # type: ignore[no-untyped-def]
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def _deberta(low=LOWEST, fill_first=True):  # type: ignore[no-untyped-def]
    """Where(Not(keep [1, 1, S, S]), low, scores [1, H, S, S]) -> Softmax -> MatMul (or the
    select the other way round: Where(keep, scores, low))."""
    branches = ["low", "scores"] if fill_first else ["scores", "low"]
    condition = "masked" if fill_first else "keep"
    nodes = [node("Not", ["keep"], ["masked"]),
             node("Where", [condition, *branches], ["filled"], name="fill"),
             node("Softmax", ["filled"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["y"])]
    constants = {"low": np.array(low, np.float32),
                 "v": np.random.default_rng(0).normal(0, 0.5, (S, 4)).astype(np.float32)}
    inputs = [("scores", np.float32, (1, HEADS, S, S)), ("keep", np.bool_, (1, 1, S, S))]
    return make(nodes, inputs, [("y", np.float32, (1, HEADS, S, 4))], constants, opset=17)


def _feeds(count=4):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    keep = np.tril(np.ones((S, S), bool)).reshape(1, 1, S, S)
    return [{"scores": rng.normal(0, 2, (1, HEADS, S, S)).astype(np.float32), "keep": keep}
            for _ in range(count)]


@pytest.mark.parametrize(("low", "fill_first"), [(LOWEST, True), (-np.inf, True),
                                                 (LOWEST, False)])
def test_the_select_becomes_an_added_mask_exactly(low, fill_first):  # type: ignore[no-untyped-def]
    _, model = _deberta(low, fill_first)
    additive = finalize(additive_masks(model, _report(model)))
    kinds = op_types(additive)
    assert kinds.count("Add") == 1 and kinds.count("Where") == 1
    where = next(n for n in additive.graph.nodes if n.op_type == "Where")
    assert "scores" not in where.inputs
    for feed in _feeds(2):
        np.testing.assert_array_equal(run_model(additive, feed)["y"], run_model(model, feed)["y"])


def test_another_fill_value_stays_a_select():  # type: ignore[no-untyped-def]
    _, model = _deberta(low=-1e4)  # s - 1e4 is not -1e4
    assert additive_masks(model, _report(model)) is model


def test_the_masked_scores_run_as_a_table_and_a_qadd():  # type: ignore[no-untyped-def]
    _, model = _deberta()
    fused, _ = run_passes(model, calibration=_feeds())
    kinds = op_types(fused)
    assert {"QAdd", "QTable", "QSoftmax"} <= set(kinds)
    assert not {"Not", "Where", "Add", "Sub", "Mul"} & set(kinds)  # Not: branches swapped
    feed = _feeds(1)[0]
    ours, theirs = run_model(fused, feed)["y"], run_model(model, feed)["y"]
    cosine = float((ours * theirs).sum() / np.linalg.norm(ours) / np.linalg.norm(theirs))
    assert cosine > 0.99
