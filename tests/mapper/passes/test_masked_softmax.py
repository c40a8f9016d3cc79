"""masked_softmax: torch's exported attention mask (Where(keep, 0, -inf) added to the scores,
an IsNaN guard after the Softmax) becomes finite, arithmetic on the mask made float (one
table), and the guard goes once the Softmax is quantized."""

import numpy as np

from systolic.mapper.passes.masked_softmax import (
    arithmetic_masks,
    finite_masks,
    quantized_isnan,
)
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

HEADS, S = 2, 6
LOWEST = np.finfo(np.float32).min


def _report(model):  # type: ignore[no-untyped-def]
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def _sdpa(*, guard=True, expand=True):  # type: ignore[no-untyped-def]
    """scores [1, H, S, S] + Where(And(true, keep) expanded, 0, -inf) -> Softmax -> guard ->
    MatMul: the shape of transformers 5's BERT export after constant folding."""
    nodes = [node("And", ["all_true", "keep"], ["both"]),
             node("Expand", ["both", "square"], ["wide"]) if expand else
             node("Identity", ["both"], ["wide"]),
             node("Where", ["wide", "zero", "ninf"], ["bias"], name="mask"),
             node("Add", ["scores", "bias"], ["s"]), node("Softmax", ["s"], ["p"], axis=-1)]
    last = "p"
    if guard:
        nodes += [node("IsNaN", ["p"], ["nan"], name="isnan"),
                  node("Where", ["nan", "zero", "p"], ["pg"], name="guard")]
        last = "pg"
    nodes.append(node("MatMul", [last, "v"], ["y"]))
    constants = {"all_true": np.ones((1, 1, S, 1), bool), "square": np.array([1, 1, S, S]),
                 "zero": np.array(0.0, np.float32), "ninf": np.array(-np.inf, np.float32),
                 "v": np.random.default_rng(0).normal(0, 0.5, (S, 4)).astype(np.float32)}
    return make(nodes, [("scores", np.float32, (1, HEADS, S, S)), ("keep", np.bool_, (1, 1, 1, S))],
                [("y", np.float32, (1, HEADS, S, 4))], constants, opset=17)  # fmt: skip


def _feeds(count=4):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    keep = np.ones((1, 1, 1, S), bool)
    keep[..., 4:] = False
    return [{"scores": rng.normal(0, 2, (1, HEADS, S, S)).astype(np.float32), "keep": keep}
            for _ in range(count)]


def test_the_minus_infinity_becomes_the_lowest_float_and_results_stay():  # type: ignore[no-untyped-def]
    _, model = _sdpa()
    finite = finalize(finite_masks(model, _report(model)))
    where = next(n for n in finite.graph.nodes if n.label == "mask")
    value = next(t.data for t in finite.graph.initializers if t.name == where.inputs[2])
    assert value == LOWEST
    for feed in _feeds(2):
        np.testing.assert_array_equal(run_model(finite, feed)["y"], run_model(model, feed)["y"])


def test_a_where_not_before_a_softmax_keeps_its_minus_infinity():  # type: ignore[no-untyped-def]
    nodes = [node("Where", ["keep", "zero", "ninf"], ["y"])]
    _, model = make(nodes, [("keep", np.bool_, (S,))], [("y", np.float32, (S,))],
                    {"zero": np.array(0.0, np.float32), "ninf": np.array(-np.inf, np.float32)})
    assert finite_masks(model, _report(model)) is model


def test_the_mask_becomes_arithmetic_on_its_condition_made_float():  # type: ignore[no-untyped-def]
    _, model = _sdpa()
    finite = finalize(finite_masks(model, _report(model)))
    rewritten = finalize(arithmetic_masks(finite, _report(finite)))
    kinds = op_types(rewritten)
    assert "Where" in kinds and kinds.count("Where") == 1  # the guard only
    cast = next(n for n in rewritten.graph.nodes if n.op_type == "Cast")
    assert cast.inputs == ("keep",)  # Expand and And(true, .) skipped: the Add broadcasts
    for feed in _feeds(2):
        np.testing.assert_array_equal(run_model(rewritten, feed)["y"],
                                      run_model(model, feed)["y"])


def test_masks_of_one_condition_share_one_cast():  # type: ignore[no-untyped-def]
    nodes = [node("Where", ["keep", "zero", "low"], ["b1"]),
             node("Where", ["keep", "one", "low"], ["b2"]),
             node("Add", ["x", "b1"], ["s1"]), node("Softmax", ["s1"], ["y1"]),
             node("Add", ["x", "b2"], ["s2"]), node("Softmax", ["s2"], ["y2"])]
    constants = {"zero": np.array(0.0, np.float32), "one": np.array(1.0, np.float32),
                 "low": np.array(-1e4, np.float32)}
    _, model = make(nodes, [("x", np.float32, (2, S)), ("keep", np.bool_, (S,))],
                    [("y1", np.float32, (2, S)), ("y2", np.float32, (2, S))], constants)
    rewritten = finalize(arithmetic_masks(model, _report(model)))
    assert op_types(rewritten).count("Cast") == 1 and "Where" not in op_types(rewritten)
    keep = np.array([1, 0, 1, 1, 0, 0], bool)
    feed = {"x": np.random.default_rng(2).normal(0, 1, (2, S)).astype(np.float32),
            "keep": keep}
    ours, theirs = run_model(rewritten, feed), run_model(model, feed)
    for name in ("y1", "y2"):
        np.testing.assert_array_equal(ours[name], theirs[name])


def _causal():  # type: ignore[no-untyped-def]
    """GPT-2's and CLIP's mask: And(causal [1, 1, S, S], keep [1, 1, 1, S]) -> Where(., 0,
    -inf) added to the scores [1, H, S, S], broadcast over the heads, in two layers (each
    its own Where of the one condition)."""
    nodes = [node("And", ["causal", "keep"], ["both"])]
    for layer in ("1", "2"):
        nodes += [node("Where", ["both", "zero", "ninf"], ["bias" + layer], name="mask" + layer),
                  node("Add", ["scores", "bias" + layer], ["s" + layer]),
                  node("Softmax", ["s" + layer], ["p" + layer], axis=-1),
                  node("MatMul", ["p" + layer, "v"], ["y" + layer])]
    nodes.append(node("Add", ["y1", "y2"], ["y"]))
    constants = {"causal": np.tril(np.ones((S, S), bool)).reshape(1, 1, S, S),
                 "zero": np.array(0.0, np.float32), "ninf": np.array(-np.inf, np.float32),
                 "v": np.random.default_rng(0).normal(0, 0.5, (S, 4)).astype(np.float32)}
    return make(nodes, [("scores", np.float32, (1, HEADS, S, S)), ("keep", np.bool_, (1, 1, 1, S))],
                [("y", np.float32, (1, HEADS, S, 4))], constants, opset=17)  # fmt: skip


def test_a_causal_condition_is_cast_then_expanded_to_the_scores_shape():  # type: ignore[no-untyped-def]
    _, model = _causal()
    finite = finalize(finite_masks(model, _report(model)))
    rewritten = finalize(arithmetic_masks(finite, _report(finite)))
    consumers = rewritten.graph.consumers()
    cast = next(n for n in rewritten.graph.nodes if n.op_type == "Cast")
    assert cast.inputs == ("keep",)  # And(causal, keep) -> Expand(Cast(keep)) * causal
    (expand,) = consumers[cast.outputs[0]]  # a float Expand: Concats of copies next
    assert expand.op_type == "Expand"
    found = rewritten.graph.type_of(expand.outputs[0])
    assert found is not None and tuple(found.shape) == (1, HEADS, S, S)
    gate = next(n for n in rewritten.graph.nodes if n.op_type == "Mul" and expand.outputs[0] in n.inputs)
    factor = next(t.data for t in rewritten.graph.initializers if t.name in gate.inputs)
    np.testing.assert_array_equal(factor, np.broadcast_to(np.tril(np.ones((S, S))), (1, HEADS, S, S)))
    assert not any("both" in n.inputs for n in rewritten.graph.nodes)  # the And is unread
    for feed in _feeds(2):
        np.testing.assert_array_equal(run_model(rewritten, feed)["y"],
                                      run_model(model, feed)["y"])


def test_the_causal_mask_arithmetic_becomes_a_table_beside_its_sum():  # type: ignore[no-untyped-def]
    _, model = _causal()
    fused, _ = run_passes(model, calibration=_feeds())
    kinds = op_types(fused)
    assert {"QSoftmax", "QAdd", "QTable", "QMul"} <= set(kinds)  # QMul: the causal gate
    assert not {"Sub", "Mul", "Add", "Where", "And", "Expand"} & set(kinds)
    assert kinds.count("DequantizeLinear") == 1  # the output's: no float mask is expanded
    feed = _feeds(1)[0]
    ours, theirs = run_model(fused, feed)["y"], run_model(model, feed)["y"]
    cosine = float((ours * theirs).sum() / np.linalg.norm(ours) / np.linalg.norm(theirs))
    assert cosine > 0.99


def test_a_mask_of_a_constant_condition_becomes_its_value():  # type: ignore[no-untyped-def]
    """nanoGPT's masked_fill(bias == 0, -inf) once folded and made additive: Where(constant
    causal, 0, -inf) -> the constant mask the Adds read (a QAdd once quantized), no host Cast."""
    nodes = [node("Where", ["causal", "zero", "ninf"], ["bias"], name="mask"),
             node("Add", ["scores", "bias"], ["s"]), node("Softmax", ["s"], ["p"], axis=-1),
             node("MatMul", ["p", "v"], ["y"])]
    constants = {"causal": np.tril(np.ones((S, S), bool)).reshape(1, 1, S, S),
                 "zero": np.array(0.0, np.float32), "ninf": np.array(-np.inf, np.float32),
                 "v": np.random.default_rng(0).normal(0, 0.5, (S, 4)).astype(np.float32)}
    _, model = make(nodes, [("scores", np.float32, (1, HEADS, S, S))],
                    [("y", np.float32, (1, HEADS, S, 4))], constants, opset=17)
    finite = finalize(finite_masks(model, _report(model)))
    folded = finalize(arithmetic_masks(finite, _report(finite)))
    assert op_types(folded) == ["Add", "Softmax", "MatMul"]
    feeds = [{"scores": f["scores"]} for f in _feeds()]
    for feed in feeds[:2]:
        np.testing.assert_array_equal(run_model(folded, feed)["y"], run_model(model, feed)["y"])
    kinds = op_types(run_passes(model, calibration=feeds)[0])
    assert "QAdd" in kinds and not {"Cast", "Add", "Where"} & set(kinds)


def test_the_guard_after_a_quantized_softmax_goes():  # type: ignore[no-untyped-def]
    nodes = [node("DequantizeLinear", ["q", "scale", "zp"], ["p"]),
             node("IsNaN", ["p"], ["nan"]), node("Where", ["nan", "zero", "p"], ["pg"]),
             node("Relu", ["pg"], ["y"])]
    constants = {"scale": np.array(0.5, np.float32), "zp": np.array(3, np.uint8),
                 "zero": np.array(0.0, np.float32)}
    _, model = make(nodes, [("q", np.uint8, (2, S))], [("y", np.float32, (2, S))], constants)
    bypassed = quantized_isnan(model, _report(model))
    relu = next(n for n in bypassed.graph.nodes if n.op_type == "Relu")
    assert relu.inputs == ("p",)


def test_the_guard_of_a_float_value_stays():  # type: ignore[no-untyped-def]
    nodes = [node("IsNaN", ["p"], ["nan"]), node("Where", ["nan", "zero", "p"], ["pg"]),
             node("Relu", ["pg"], ["y"])]
    _, model = make(nodes, [("p", np.float32, (2, S))], [("y", np.float32, (2, S))],
                    {"zero": np.array(0.0, np.float32)})
    assert quantized_isnan(model, _report(model)) is model


def test_the_whole_float_model_runs_on_the_accelerator():  # type: ignore[no-untyped-def]
    _, model = _sdpa()
    fused, _ = run_passes(model, calibration=_feeds())
    kinds = op_types(fused)
    assert {"QSoftmax", "QAdd", "QTable"} <= set(kinds)
    assert "IsNaN" not in kinds and "Where" not in kinds and "Add" not in kinds
    feed = _feeds(1)[0]
    ours, theirs = run_model(fused, feed)["y"], run_model(model, feed)["y"]
    cosine = float((ours * theirs).sum() / np.linalg.norm(ours) / np.linalg.norm(theirs))
    assert cosine > 0.99
