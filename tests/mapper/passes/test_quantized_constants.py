"""fold_quantized_constants: a DequantizeLinear whose integer input is computed from constants
only (through QuantizeLinear/DequantizeLinear too: onnxruntime's QDQ rotary tables) reads that
value as a constant; the model computes what it did, and a Mul of it becomes a QMul."""

import numpy as np

from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.quantized_constants import fold_quantized_constants
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

S, Z = np.float32(0.01), np.uint8(128)


def _rotary_model():  # type: ignore[no-untyped-def]
    """cos(t) -> Q -> DQ -> Unsqueeze -> Q -> DQ = c [1, 1, 3, 4], then DQ(xq) [1, 2, 3, 4]
    times c -> Q -> y: the table of a QDQ rotary embedding."""
    t = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    nodes = [node("Cos", ["t"], ["cos"]),
             node("QuantizeLinear", ["cos", "s", "z"], ["cq"]),
             node("DequantizeLinear", ["cq", "s", "z"], ["cd"]),
             node("Unsqueeze", ["cd", "axes"], ["cu"]),
             node("QuantizeLinear", ["cu", "s", "z"], ["uq"]),
             node("DequantizeLinear", ["uq", "s", "z"], ["c"], name="dq_table"),
             node("DequantizeLinear", ["xq", "xs", "z"], ["x"]),
             node("Mul", ["x", "c"], ["m"], name="rotary"),
             node("QuantizeLinear", ["m", "ys", "z"], ["y"])]
    constants = {"t": t, "s": S, "z": Z, "xs": np.float32(0.05), "ys": np.float32(0.04),
                 "axes": np.array([0, 1], np.int64)}
    return make(nodes, [("xq", np.uint8, [1, 2, 3, 4])], [("y", np.uint8, [1, 2, 3, 4])],
                constants)[1]


def _feed():  # type: ignore[no-untyped-def]
    return {"xq": np.random.default_rng(1).integers(0, 256, (1, 2, 3, 4)).astype(np.uint8)}


def test_the_table_becomes_a_constant_with_the_same_result():
    model = _rotary_model()
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    folded = finalize(fold_quantized_constants(model, report))
    dq = next(n for n in folded.graph.nodes if n.name == "dq_table")
    value = folded.graph.initializer(dq.inputs[0])
    assert value is not None and value.data.shape == (1, 1, 3, 4)
    assert value.data.dtype == np.uint8
    np.testing.assert_array_equal(run_model(folded, _feed())["y"], run_model(model, _feed())["y"])


def test_the_product_becomes_a_qmul():
    """With the pipeline: the table expanded over the heads, a QMul (host Mul before: "the
    Mul's inputs [1, 2, 3, 4] and [1, 1, 3, 4] are neither the same shape ..."), within one
    output step of the model (the QMul rounds its integer product once)."""
    model = _rotary_model()
    integer, report = run_passes(model)
    assert op_types(integer) == ["QMul"]
    assert report.fate("rotary").into.startswith("systolic.QMul")
    got, want = run_model(integer, _feed())["y"], run_model(model, _feed())["y"]
    assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1


def test_a_dequantize_of_a_computed_input_is_left_alone():
    """xq depends on a graph input: nothing to fold."""
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             node("DequantizeLinear", ["xq", "s", "z"], ["y"])]
    _, model = make(nodes, [("x", np.float32, [2, 3])], [("y", np.float32, [2, 3])],
                    {"s": S, "z": Z})
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert fold_quantized_constants(model, report) is model


def test_a_qoperator_table_becomes_a_constant_and_the_product_a_qmul():
    """onnxruntime's QOperator form: QuantizeLinear(Cos(t)) -> QLinearMul(x, table) with the
    table [1, 1, 3, 4] broadcast over x [1, 2, 3, 4]: folded, expanded to x's shape by
    normalize_qoperator and a QMul (host before: "the inputs [1, 2, 3, 4] and [1, 1, 3, 4]
    are neither the same shape ..."), within one step of the model."""
    t = np.linspace(-2, 2, 12, dtype=np.float32).reshape(1, 1, 3, 4)
    nodes = [node("Cos", ["t"], ["cos"]),
             node("QuantizeLinear", ["cos", "s", "z"], ["cq"]),
             node("QLinearMul", ["xq", "xs", "z", "cq", "s", "z", "ys", "z"], ["y"],
                  domain="com.microsoft", name="rotary")]
    constants = {"t": t, "s": S, "z": Z, "xs": np.float32(0.05), "ys": np.float32(0.04)}
    _, model = make(nodes, [("xq", np.uint8, [1, 2, 3, 4])], [("y", np.uint8, [1, 2, 3, 4])],
                    constants, ms=True)
    integer, report = run_passes(model)
    assert op_types(integer) == ["QMul"]
    assert report.fate("rotary").into.startswith("systolic.QMul")
    b = integer.graph.initializer(integer.graph.nodes[0].inputs[1])
    assert b is not None and b.data.shape == (1, 2, 3, 4)
    got, want = run_model(integer, _feed())["y"], run_model(model, _feed())["y"]
    assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1
