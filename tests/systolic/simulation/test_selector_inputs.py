"""Selector inputs: an integer scalar input that chooses an If's branch is fixed for one run."""

import numpy as np

from systolic.mapper.importer import load_model_bytes
from systolic.simulation.prepare import prepare_model
from systolic.simulation.selector_inputs import describe, fix_selector_inputs, selector_inputs

from ...support.if_models import if_of_rate, if_of_values, nested_if


def _model(proto):
    return load_model_bytes(proto.SerializeToString())


def test_only_small_integer_inputs_behind_an_if_condition_select():
    assert selector_inputs(_model(if_of_rate())) == ("sr",)
    assert selector_inputs(_model(nested_if())) == ("a",)  # b decides an If inside a branch
    assert selector_inputs(_model(if_of_values())) == ()  # a float tensor decides it


def test_fixing_turns_the_input_into_a_constant_and_names_it():
    model = _model(if_of_rate())
    feed = {"x": np.zeros((1, 8), np.float32), "sr": np.array(16000, np.int64)}
    fixed, names = fix_selector_inputs(model, feed)
    assert names == ("sr",)
    assert [info.name for info in fixed.graph.inputs] == ["x"]
    constant = fixed.graph.initializer("sr")
    assert constant is not None and constant.data.tolist() == 16000
    assert fix_selector_inputs(model, {"x": feed["x"]}) == (model, ())  # not given: stays
    assert describe(names, feed) == "'sr' = 16000 fixed for this run (it selects an If's branch)"


def test_the_chosen_branch_runs_on_the_accelerator(tmp_path):
    # The 8 kHz branch cannot take an 8-column frame: before the fix, binding the shapes
    # refused the model; now the If folds and its MatMul is mapped.
    path = tmp_path / "rate.onnx"
    path.write_bytes(if_of_rate().SerializeToString())
    feed = tmp_path / "feed.npz"
    np.savez(feed, x=np.ones((1, 8), np.float32), sr=np.array(16000, np.int64))
    prepared = prepare_model(path, input_path=feed)
    ops = [node.op_type for node in prepared.integer.graph.nodes]
    assert "If" not in ops and "QMatMul" in ops
    assert prepared.input_source == (f"{feed}; 'sr' = 16000 fixed for this run (it selects an "
                                     "If's branch)")
    assert [info.name for info in prepared.original.graph.inputs] == ["x", "sr"]
