"""constant_masks: a constant causal mask of 0 and -inf added to the scores before a Softmax
becomes finite (float's lowest) when every row keeps a position, exactly; then a QAdd."""

import numpy as np

from systolic.mapper.passes.constant_masks import finite_constant_masks
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

HEADS, S = 2, 6


def _report(model):  # type: ignore[no-untyped-def]
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def _causal(mask):  # type: ignore[no-untyped-def]
    """Two layers' scores [1, H, S, S] + the constant `mask` -> Softmax -> MatMul, summed."""
    nodes = []
    for k in ("1", "2"):
        nodes += [node("Add", ["s" + k, "mask"], ["a" + k]),
                  node("Softmax", ["a" + k], ["p" + k], axis=-1),
                  node("MatMul", ["p" + k, "v"], ["y" + k])]
    nodes.append(node("Add", ["y1", "y2"], ["y"]))
    constants = {"mask": mask.astype(np.float32),
                 "v": np.random.default_rng(0).normal(0, 0.5, (S, 4)).astype(np.float32)}
    shape = (1, HEADS, S, S)
    return make(nodes, [("s1", np.float32, shape), ("s2", np.float32, shape)],
                [("y", np.float32, (1, HEADS, S, 4))], constants, opset=17)


def _triangle():  # type: ignore[no-untyped-def]
    return np.triu(np.full((S, S), -np.inf), 1).reshape(1, 1, S, S)


def _feeds(count=4):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    shape = (1, HEADS, S, S)
    return [{"s1": rng.normal(0, 2, shape).astype(np.float32),
             "s2": rng.normal(0, 2, shape).astype(np.float32)} for _ in range(count)]


def test_the_minus_infinities_become_the_lowest_float_exactly():  # type: ignore[no-untyped-def]
    _, model = _causal(_triangle())
    finite = finalize(finite_constant_masks(model, _report(model)))
    add = next(n for n in finite.graph.nodes if n.op_type == "Add")
    mask = next(t.data for t in finite.graph.initializers if t.name == add.inputs[1])
    assert mask.min() == np.finfo(np.float32).min and np.isfinite(mask).all()
    for feed in _feeds(2):
        np.testing.assert_array_equal(run_model(finite, feed)["y"], run_model(model, feed)["y"])


def test_a_mask_with_a_row_of_minus_infinity_alone_stays():  # type: ignore[no-untyped-def]
    mask = _triangle()
    mask[..., 0, :] = -np.inf  # the first row keeps nothing: NaN with -inf, uniform if finite
    _, model = _causal(mask)
    assert finite_constant_masks(model, _report(model)) is model


def test_the_masked_sums_are_qadds():  # type: ignore[no-untyped-def]
    _, model = _causal(_triangle())
    fused, _ = run_passes(model, calibration=_feeds())
    kinds = op_types(fused)
    assert kinds.count("QAdd") == 3 and "Add" not in kinds and kinds.count("QSoftmax") == 2
    feed = _feeds(1)[0]
    ours, theirs = run_model(fused, feed)["y"], run_model(model, feed)["y"]
    cosine = float((ours * theirs).sum() / np.linalg.norm(ours) / np.linalg.norm(theirs))
    assert cosine > 0.99
