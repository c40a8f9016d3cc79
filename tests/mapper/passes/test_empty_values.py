"""empty_values: a node whose results have no elements folds into empty constants, and a
Concat drops such inputs (a Concat of one input left is its input); exact."""

import numpy as np

from systolic.mapper.passes.empty_values import drop_empty_values
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.report import FOLDED, REMOVED, PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types


def _report(model):  # type: ignore[no-untyped-def]
    return PassReport((n.name, n.op_id) for n in model.graph.nodes)


def _constants(name, start):  # type: ignore[no-untyped-def]
    return {f"{name}_start": np.array([start], np.int64),
            f"{name}_end": np.array([np.iinfo(np.int64).max], np.int64),
            f"{name}_axis": np.array([-1], np.int64)}


def _slice(x, name, out):  # type: ignore[no-untyped-def]
    return node("Slice", [x, f"{name}_start", f"{name}_end", f"{name}_axis"], [out], name=name)


def _pass_through_model(*, second=True, concat_out=False):  # type: ignore[no-untyped-def]
    """y = Concat(Relu(x), x[..., 8:]) [, Relu(x)] of x [2, 4, 8] (a partial rotary embedding's
    empty pass-through part): Mul(., 2) unless the Concat is the output."""
    inputs = ["r", "empty", "r"] if second else ["r", "empty"]
    nodes = [node("Relu", ["x"], ["r"], name="relu"), _slice("x", "tail", "empty"),
             node("Concat", inputs, ["y" if concat_out else "c"], axis=-1, name="concat")]
    constants = _constants("tail", 8)
    if not concat_out:
        nodes.append(node("Mul", ["c", "two"], ["y"], name="mul"))
        constants["two"] = np.float32(2.0)
    width = 16 if second else 8
    return make(nodes, [("x", np.float32, (2, 4, 8))], [("y", np.float32, (2, 4, width))],
                constants)


def _feed():  # type: ignore[no-untyped-def]
    return {"x": np.random.default_rng(0).normal(0, 1, (2, 4, 8)).astype(np.float32)}


def test_an_empty_slice_folds_and_its_concat_becomes_its_other_input():  # type: ignore[no-untyped-def]
    _, model = _pass_through_model(second=False)
    report = _report(model)
    done = drop_empty_values(model, report)
    assert op_types(done) == ["Relu", "Mul"]
    mul = done.graph.nodes[1]
    assert mul.inputs[0] == "r"
    assert report.fate("tail").action == FOLDED
    assert report.fate("concat").action == REMOVED
    assert np.array_equal(run_model(done, _feed())["y"], run_model(model, _feed())["y"])


def test_a_concat_of_two_non_empty_inputs_keeps_them():  # type: ignore[no-untyped-def]
    _, model = _pass_through_model()
    done = drop_empty_values(model, _report(model))
    concat = next(n for n in done.graph.nodes if n.op_type == "Concat")
    assert concat.inputs == ("r", "r")
    assert "Slice" not in op_types(done)
    assert np.array_equal(run_model(done, _feed())["y"], run_model(model, _feed())["y"])


def test_a_concat_that_is_a_graph_output_stays():  # type: ignore[no-untyped-def]
    _, model = _pass_through_model(second=False, concat_out=True)
    done = drop_empty_values(model, _report(model))
    assert op_types(done) == ["Relu", "Concat"]
    assert done.graph.nodes[1].inputs == ("r",)
    assert np.array_equal(run_model(done, _feed())["y"], run_model(model, _feed())["y"])


def test_a_model_without_empty_values_is_returned_as_it_is():  # type: ignore[no-untyped-def]
    nodes = [node("Relu", ["x"], ["r"]), node("Concat", ["r", "x"], ["y"], axis=-1)]
    _, model = make(nodes, [("x", np.float32, (2, 3))], [("y", np.float32, (2, 6))], {})
    assert drop_empty_values(model, _report(model)) is model


def test_a_qlinear_concat_drops_the_triple_of_an_empty_input():  # type: ignore[no-untyped-def]
    """The QOperator form: Q(x[..., 8:]) read by QLinearConcat with its scale and zero point."""
    scale, zero = np.float32(0.05), np.uint8(128)
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
             _slice("x", "tail", "empty"),
             node("QuantizeLinear", ["empty", "s", "z"], ["qe"], name="qe"),
             node("QLinearConcat", ["s", "z", "q", "s", "z", "qe", "s", "z"], ["c"], axis=-1,
                  domain="com.microsoft", name="concat"),
             node("DequantizeLinear", ["c", "s", "z"], ["y"], name="dq")]
    constants = {"s": scale, "z": zero, **_constants("tail", 8)}
    _, model = make(nodes, [("x", np.float32, (2, 4, 8))], [("y", np.float32, (2, 4, 8))],
                    constants, ms=True)
    done = drop_empty_values(model, _report(model))
    concat = next(n for n in done.graph.nodes if n.op_type == "QLinearConcat")
    assert concat.inputs == ("s", "z", "q", "s", "z")
    assert op_types(done) == ["QuantizeLinear", "QLinearConcat", "DequantizeLinear"]
    assert np.array_equal(run_model(done, _feed())["y"], run_model(model, _feed())["y"])


def test_the_pass_through_slice_leaves_the_host():  # type: ignore[no-untyped-def]
    """Through the pipeline: no Slice or Concat is left for the host (before: the empty Slice
    had no strided view, and its Concat read it from the host)."""
    _, model = _pass_through_model()
    fused, report = run_passes(model, calibration=[_feed()])
    assert "Slice" not in op_types(fused)
    assert report.fate("tail").action == FOLDED
