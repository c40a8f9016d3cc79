"""dequantize_after_layout through a tree of layout ops (a QOperator export's fused qkv
projection: DQ -> Slice -> Transpose -> {Q, Slice -> Q, Slice -> Neg -> Q}): one level per
run, the pipeline repeating it, until every Slice and the Transpose move integers; a moving
layout op that leads to no such Slice is left alone."""

import numpy as np

from systolic.config import ArrayConfig
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.dequantize_after_layout import dequantize_after_layout
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model
from systolic.simulation.runner import simulate

from .model_builder import build, node
from .test_dequantize_after_layout import SHAPE, _inputs, _qdq_front, rewritten, same_outputs


def _slice(data, name, out, start, end, axis):  # type: ignore[no-untyped-def]
    """A Slice node and its constants."""
    constants = {f"{name}_{k}": np.array([v], np.int64)
                 for k, v in (("starts", start), ("ends", end), ("axes", axis))}
    return node("Slice", [data, *constants], [out], name=name), constants


def _qkv_model():  # type: ignore[no-untyped-def]
    """x -> Q -> DQ -> Slice(channels 0:4) -> Transpose -> {Q(s2), [..., :2] -> Q(s2),
    [..., 2:] -> Neg -> Q(s)}."""
    constants: dict[str, np.ndarray] = {}
    nodes = _qdq_front(constants)
    parts = [_slice("xd", "split_q", "f", 0, 4, 1), _slice("t", "first", "a", 0, 2, 3),
             _slice("t", "second", "b", 2, 4, 3)]
    for _, more in parts:
        constants.update(more)
    nodes += [parts[0][0], node("Transpose", ["f"], ["t"], name="heads", perm=[0, 2, 1, 3]),
              node("QuantizeLinear", ["t", "s2", "z"], ["y0"], name="q0"),
              parts[1][0], node("QuantizeLinear", ["a", "s2", "z"], ["y1"], name="q1"),
              parts[2][0], node("Neg", ["b"], ["n"], name="neg"),
              node("QuantizeLinear", ["n", "s", "z"], ["y2"], name="q2")]
    outputs = [("y0", np.uint8, [1, 4, 4, 4]), ("y1", np.uint8, [1, 4, 4, 2]),
               ("y2", np.uint8, [1, 4, 4, 2])]
    return build(nodes, [("x", np.float32, SHAPE)], outputs, constants)


def test_one_run_takes_the_first_level_of_the_tree():  # type: ignore[no-untyped-def]
    model = _qkv_model()
    result, report = rewritten(model)
    split = next(n for n in result.graph.nodes if n.name == "split_q")
    assert split.inputs[0] == "xq"  # the integers
    heads = next(n for n in result.graph.nodes if n.name == "heads")
    reader_of = {out: n for n in result.graph.nodes for out in n.outputs}
    assert reader_of[heads.inputs[0]].op_type == "DequantizeLinear"
    assert report.fate("split_q").action == "layout"
    same_outputs(result, model)


def test_the_pipeline_moves_integers_through_the_whole_tree():  # type: ignore[no-untyped-def]
    model = _qkv_model()
    integer, report = run_passes(model)
    kinds = [(n.domain, n.op_type) for n in integer.graph.nodes]
    assert ("", "DequantizeLinear") not in kinds
    assert {op for _, op in kinds} == {"QuantizeLinear", "Slice", "Transpose", "QTable"}
    for name in ("split_q", "heads", "first", "second"):
        assert report.fate(name).action == "layout"
    compiled = compile_model(integer, ArrayConfig(rows=16, cols=16))
    for seed in range(2):
        got = simulate(compiled, _inputs(seed), backend="model")
        want = run_model(model, _inputs(seed))
        for name in ("y0", "y1", "y2"):
            np.testing.assert_array_equal(got[name], want[name])


def test_a_moving_op_that_leads_to_no_slice_is_left_alone():  # type: ignore[no-untyped-def]
    """DQ -> Transpose -> Q: the fusions' layout on integers already; nothing to move here."""
    constants: dict[str, np.ndarray] = {}
    nodes = _qdq_front(constants)
    nodes += [node("Transpose", ["xd"], ["t"], name="heads", perm=[0, 2, 1, 3]),
              node("QuantizeLinear", ["t", "s", "z"], ["y"], name="q_out")]
    model = build(nodes, [("x", np.float32, SHAPE)], [("y", np.uint8, [1, 4, 6, 4])],
                  constants)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert dequantize_after_layout(model, report) is model
