"""biased_masks: T5's Where(keep, position bias, lowest) added to every layer's scores is
split into the bias Add and a Where of two constants per layer, exactly."""

import numpy as np

from systolic.mapper.passes.biased_masks import split_biased_masks
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

HEADS, S = 2, 6
LOWEST = np.finfo(np.float32).min


def _report(model):  # type: ignore[no-untyped-def]
    return PassReport((n.label, n.op_id) for n in model.graph.nodes)


def _t5(low=LOWEST, bias="constant"):  # type: ignore[no-untyped-def]
    """Two layers' scores + Where(keep [1, 1, 1, S] expanded, bias [1, H, S, S], low) ->
    Softmax -> MatMul, summed. `bias`: "constant"; "dequantized" (Unsqueeze(DQ(int8 table)),
    a dynamic export's); "input" (a graph input, nothing known of its values)."""
    rng = np.random.default_rng(0)
    nodes = [node("Expand", ["keep", "square"], ["wide"])]
    if bias == "dequantized":
        nodes += [node("DequantizeLinear", ["table", "table_scale"], ["table_float"]),
                  node("Unsqueeze", ["table_float", "axis0"], ["bias"])]
    nodes.append(node("Where", ["wide", "bias", "low"], ["position_bias"], name="mask"))
    for layer in ("1", "2"):
        nodes += [node("Add", ["scores" + layer, "position_bias"], ["s" + layer]),
                  node("Softmax", ["s" + layer], ["p" + layer], axis=-1),
                  node("MatMul", ["p" + layer, "v"], ["y" + layer])]
    nodes.append(node("Add", ["y1", "y2"], ["y"]))
    constants = {"square": np.array([1, 1, S, S]), "low": np.array(low, np.float32),
                 "v": rng.normal(0, 0.5, (S, 4)).astype(np.float32)}
    inputs = [("scores1", np.float32, (1, HEADS, S, S)), ("scores2", np.float32, (1, HEADS, S, S)),
              ("keep", np.bool_, (1, 1, 1, S))]
    if bias == "constant":
        constants["bias"] = rng.normal(0, 1, (1, HEADS, S, S)).astype(np.float32)
    elif bias == "dequantized":
        constants.update(table=rng.integers(-127, 128, (HEADS, S, S)).astype(np.int8),
                         table_scale=np.array(0.01, np.float32), axis0=np.array([0]))
    else:
        inputs.append(("bias", np.float32, (1, HEADS, S, S)))
    return make(nodes, inputs, [("y", np.float32, (1, HEADS, S, 4))], constants, opset=17)


def test_a_dequantized_bias_is_split_and_one_of_unknown_values_is_not():  # type: ignore[no-untyped-def]
    _, model = _t5(bias="dequantized")
    split = finalize(split_biased_masks(model, _report(model)))
    assert op_types(split).count("Where") == 2
    for feed in _feeds(2):
        np.testing.assert_array_equal(run_model(split, feed)["y"], run_model(model, feed)["y"])
    _, model = _t5(bias="input")  # (+inf at a masked position would give inf, not low)
    assert split_biased_masks(model, _report(model)) is model


def _feeds(count=4):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    keep = np.ones((1, 1, 1, S), bool)
    keep[..., 4:] = False
    return [{"scores1": rng.normal(0, 2, (1, HEADS, S, S)).astype(np.float32),
             "scores2": rng.normal(0, 2, (1, HEADS, S, S)).astype(np.float32), "keep": keep}
            for _ in range(count)]


def test_each_layer_adds_the_bias_then_its_own_mask_exactly():  # type: ignore[no-untyped-def]
    _, model = _t5()
    split = finalize(split_biased_masks(model, _report(model)))
    kinds = op_types(split)
    assert kinds.count("Where") == 2 and kinds.count("Add") == 5  # 2 bias, 2 mask, the sum
    for where in (n for n in split.graph.nodes if n.op_type == "Where"):
        readers = [n for n in split.graph.nodes if where.outputs[0] in n.inputs]
        assert len(readers) == 1 and readers[0].op_type == "Add"
    for feed in _feeds(2):
        np.testing.assert_array_equal(run_model(split, feed)["y"], run_model(model, feed)["y"])


def test_a_mask_of_another_low_value_stays():  # type: ignore[no-untyped-def]
    _, model = _t5(low=-1e4)  # (s + A) - 1e4 differs from s - 1e4 in float
    assert split_biased_masks(model, _report(model)) is model


def test_the_biased_mask_runs_as_qadds_and_tables():  # type: ignore[no-untyped-def]
    _, model = _t5()
    fused, _ = run_passes(model, calibration=_feeds())
    kinds = op_types(fused)
    assert {"QAdd", "QTable", "QSoftmax"} <= set(kinds)
    assert not {"Add", "Sub", "Mul", "Where"} & set(kinds)
    feed = _feeds(1)[0]
    ours, theirs = run_model(fused, feed)["y"], run_model(model, feed)["y"]
    cosine = float((ours * theirs).sum() / np.linalg.norm(ours) / np.linalg.norm(theirs))
    assert cosine > 0.99
