"""dequantize_after_layout: a Slice whose only reader is a one-input element-wise float op
that a QuantizeLinear reads (onnxruntime's QOperator rotate_half: DQ -> Slice -> Neg -> Q)
selects the integers, and the op becomes a table; a Slice read by an op of two computed
inputs stays float."""

import numpy as np

from systolic.config import ArrayConfig
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model
from systolic.simulation.runner import simulate

from .model_builder import build, node
from .test_dequantize_after_layout import SHAPE, _inputs, _qdq_front, rewritten, same_outputs

HALF = [1, 3, 4, 4]


def _slice_then(op_nodes, outputs):  # type: ignore[no-untyped-def]
    constants: dict[str, np.ndarray] = {"starts": np.array([3], np.int64),
                                        "ends": np.array([6], np.int64),
                                        "axes": np.array([1], np.int64)}
    nodes = _qdq_front(constants)
    nodes += [node("Slice", ["xd", "starts", "ends", "axes"], ["f"], name="slice"), *op_nodes]
    return build(nodes, [("x", np.float32, SHAPE)], outputs, constants)


def test_a_slice_read_by_neg_then_quantize_selects_integers_and_the_neg_is_a_table():
    model = _slice_then([node("Neg", ["f"], ["n"], name="neg"),
                         node("QuantizeLinear", ["n", "s", "z"], ["y"], name="q_out")],
                        [("y", np.uint8, HALF)])
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [
        "QuantizeLinear", "Slice", "DequantizeLinear", "Neg", "QuantizeLinear"]
    assert report.fate("slice").action == "layout"
    same_outputs(result, model)
    integer, _ = run_passes(model)
    assert [(n.domain, n.op_type) for n in integer.graph.nodes] == [
        ("", "QuantizeLinear"), ("", "Slice"), ("systolic", "QTable")]
    compiled = compile_model(integer, ArrayConfig(rows=16, cols=16))
    for seed in range(2):
        got = simulate(compiled, _inputs(seed), backend="model")["y"]
        np.testing.assert_array_equal(got, run_model(model, _inputs(seed))["y"])


def test_a_slice_read_by_an_op_of_two_computed_inputs_stays_float():
    model = _slice_then([node("Mul", ["f", "f"], ["m"], name="square"),
                         node("QuantizeLinear", ["m", "s", "z"], ["y"], name="q_out")],
                        [("y", np.uint8, HALF)])
    result, report = rewritten(model)
    assert [n.op_type for n in result.graph.nodes] == [n.op_type for n in model.graph.nodes]
    assert "no output is read by a QuantizeLinear" in report.note_of("slice")
