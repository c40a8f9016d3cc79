"""Decomposed softmax (ReduceMax, Sub, Exp, ReduceSum, Div) becomes one Softmax."""

import numpy as np
import pytest

from systolic.mapper.passes.decomposed_softmax import decomposed_softmax
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node

SHAPE = (2, 3, 7)
X = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32) * 4


def _rewrite(model):  # type: ignore[no-untyped-def]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(decomposed_softmax(model, report)), report


def _keepdims_form(opset, axis=-1, exp_reader=False):  # type: ignore[no-untyped-def]
    """PyTorch-style: keepdims = 1, the statistics broadcast by the Sub and the Div."""
    axes = {"axes": [axis]} if opset < 18 else {}
    max_inputs = ["x"] if opset < 18 else ["x", "axes"]
    sum_inputs = ["e", "axes"] if opset >= 13 else ["e"]
    sum_axes = {} if opset >= 13 else {"axes": [axis]}
    nodes = [node("ReduceMax", max_inputs, ["m"], name="max", keepdims=1, **axes),
             node("Sub", ["x", "m"], ["d"], name="sub"),
             node("Exp", ["d"], ["e"], name="exp"),
             node("ReduceSum", sum_inputs, ["s"], name="sum", keepdims=1, **sum_axes),
             node("Div", ["e", "s"], ["y"], name="div")]
    outputs = [("y", np.float32, list(SHAPE))]
    if exp_reader:
        nodes.append(node("Neg", ["e"], ["z"], name="neg"))
        outputs.append(("z", np.float32, list(SHAPE)))
    return build(nodes, [("x", np.float32, list(SHAPE))], outputs,
                 {"axes": np.array([axis], np.int64)}, opset=opset)


def _jax_form(matmul=False):  # type: ignore[no-untyped-def]
    """jax2tf: keepdims = 0, Max with -inf, Reshape and Expand back to rows (after a MatMul
    with `matmul`, as in a classifier's head)."""
    rows = np.array([*SHAPE[:-1], 1], np.int64)
    head = [node("MatMul", ["x0", "w"], ["x"], name="dense")] if matmul else []
    nodes = [*head,
             node("ReduceMax", ["x"], ["m0"], name="max", axes=[2], keepdims=0),
             node("Max", ["ninf", "m0"], ["m1"], name="finite"),
             node("Reshape", ["m1", "rows"], ["m2"], name="reshape_max"),
             node("Sub", ["x", "m2"], ["d"], name="sub"),
             node("Exp", ["d"], ["e"], name="exp"),
             node("ReduceSum", ["e", "axes"], ["s0"], name="sum", keepdims=0),
             node("Reshape", ["s0", "rows"], ["s1"], name="reshape_sum"),
             node("Expand", ["s1", "rows"], ["s2"], name="expand"),
             node("Div", ["e", "s2"], ["y"], name="div")]
    constants = {"ninf": np.array(-np.inf, np.float32), "rows": rows,
                 "axes": np.array([2], np.int64)}
    if matmul:
        constants["w"] = np.random.default_rng(1).standard_normal((5, SHAPE[-1])).astype(
            np.float32)
    source = ("x0", np.float32, [*SHAPE[:-1], 5]) if matmul else ("x", np.float32, list(SHAPE))
    return build(nodes, [source], [("y", np.float32, list(SHAPE))], constants, opset=15)


@pytest.mark.parametrize("model", [_keepdims_form(11), _keepdims_form(13), _keepdims_form(18),
                                   _jax_form()], ids=["opset11", "opset13", "opset18", "jax"])
def test_a_decomposed_softmax_becomes_softmax(model):  # type: ignore[no-untyped-def]
    rewritten, report = _rewrite(model)
    assert [n.op_type for n in rewritten.graph.nodes] == ["Softmax"]
    assert report.fate("exp").into == "Softmax 'div' (float)"
    got = run_model(rewritten, {"x": X})["y"]
    np.testing.assert_allclose(got, run_model(model, {"x": X})["y"], rtol=1e-6, atol=1e-7)


def test_without_the_maximum_it_is_still_softmax():  # type: ignore[no-untyped-def]
    nodes = [node("Exp", ["x"], ["e"], name="exp"),
             node("ReduceSum", ["e", "axes"], ["s"], name="sum", keepdims=1),
             node("Div", ["e", "s"], ["y"], name="div")]
    model = build(nodes, [("x", np.float32, list(SHAPE))], [("y", np.float32, list(SHAPE))],
                  {"axes": np.array([-1], np.int64)})
    rewritten, _ = _rewrite(model)
    assert [n.op_type for n in rewritten.graph.nodes] == ["Softmax"]
    np.testing.assert_allclose(run_model(rewritten, {"x": X})["y"],
                               run_model(model, {"x": X})["y"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("model", [_keepdims_form(13, axis=1),
                                   _keepdims_form(13, exp_reader=True)],
                         ids=["other-axis", "exp-read-elsewhere"])
def test_other_chains_stay(model):  # type: ignore[no-untyped-def]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert decomposed_softmax(model, report) is model


def test_a_float_model_runs_it_as_quantized_softmax():  # type: ignore[no-untyped-def]
    integer, _ = run_passes(_jax_form(matmul=True), seed=0)
    assert [n.op_type for n in integer.graph.nodes] == [
        "QuantizeLinear", "QMatMul", "QSoftmax", "DequantizeLinear"]
