"""expand_computed_operand: in a float model, an Add/Mul operand that broadcasts over the other
(a causal mask [1, 1, S, S] over the scores [1, H, S, S]) is read through an Expand, so the
model computes exactly what it did and post-training quantization makes the sum a QAdd."""

import numpy as np
import pytest

from systolic.mapper.passes.expand_computed_operand import (
    MAX_EXPANDED_ELEMENTS,
    broadcast_operand,
    expand_computed_operand,
)
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node


@pytest.mark.parametrize(("a", "b", "small"), [
    ((1, 4, 6, 6), (1, 1, 6, 6), 1),  # GPT-2's causal mask over the heads
    ((1, 1, 6, 6), (1, 4, 6, 6), 0),
    ((2, 3, 5), (3, 5), 1),  # fewer axes
    ((1, 4, 6, 6), (1, 4, 1, 1), None),  # per channel: the vector unit broadcasts it
    ((1, 4, 6, 6), (6,), None),  # along the last axis: likewise
    ((1, 4, 6, 6), (1, 4, 6, 6), None),  # one shape
    ((1, 4, 6, 6), (1, 1, 1, 1), None),  # one element: a table's constant
    ((1, 4, 6, 6), (1, 3, 6, 6), None),  # not broadcast
    ((2, 1, 6), (1, 4, 6), None),  # both broadcast: no operand has the result's shape
])
def test_broadcast_operand(a, b, small):  # type: ignore[no-untyped-def]
    assert broadcast_operand(a, b) == small


def test_no_operand_is_expanded_beyond_the_limit():
    assert broadcast_operand((MAX_EXPANDED_ELEMENTS + 1, 2), (1, 2)) is None


def _model():  # type: ignore[no-untyped-def]
    """scores [1, 4, 6, 6] + mask [1, 1, 6, 6], both computed (graph inputs times 1)."""
    nodes = [node("Mul", ["x", "one"], ["scores"]), node("Mul", ["m", "one"], ["mask"]),
             node("Add", ["scores", "mask"], ["y"])]
    return make(nodes, [("x", np.float32, (1, 4, 6, 6)), ("m", np.float32, (1, 1, 6, 6))],
                [("y", np.float32, (1, 4, 6, 6))], {"one": np.array(1.0, np.float32)})[1]


def test_the_mask_is_expanded_and_the_model_computes_what_it_did():
    model = _model()
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    expanded = finalize(expand_computed_operand(model, report))
    (expand,) = [n for n in expanded.graph.nodes if n.op_type == "Expand"]
    add = next(n for n in expanded.graph.nodes if n.op_type == "Add")
    assert add.inputs == ("scores", expand.outputs[0])
    rng = np.random.default_rng(3)
    feed = {"x": rng.normal(0, 1, (1, 4, 6, 6)).astype(np.float32),
            "m": rng.normal(0, 1, (1, 1, 6, 6)).astype(np.float32)}
    np.testing.assert_array_equal(run_model(expanded, feed)["y"], run_model(model, feed)["y"])


def test_the_sum_becomes_a_qadd():
    """With the pipeline (float model: post-training quantization): a QAdd, where the Add
    stayed float on the host before."""
    integer, _ = run_passes(_model())
    assert "QAdd" in [n.op_type for n in integer.graph.nodes]
    assert "Add" not in [n.op_type for n in integer.graph.nodes]
