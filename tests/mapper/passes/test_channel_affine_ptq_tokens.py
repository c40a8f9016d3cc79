"""Float Mul/Add of a vector along a token tensor's last axis (x [N, S, C] times or plus a [C]
constant: MobileBERT's NoNorm, a transformer's layer scale) are quantized by channel_affine_ptq
into a QMul and a QAdd of a last-axis B and run on the vector unit bit-exact."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.passes.channel_affine_ptq import channel_vector_index
from systolic.mapper.passes.graph_tools import constants_of
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model
from systolic.simulation.layer_check import check_layers

from .model_builder import build, node

RNG = np.random.default_rng(11)
S, C = 5, 8


def _no_norm_model():  # type: ignore[no-untyped-def]
    """x -> MatMul -> Add(x) -> Mul(gamma [C]) -> Add(beta [C]) -> MatMul -> y (NoNorm)."""
    constants = {"w1": RNG.standard_normal((C, C)).astype(np.float32) / 3,
                 "w2": RNG.standard_normal((C, 4)).astype(np.float32) / 3,
                 "gamma": RNG.uniform(0.5, 2, C).astype(np.float32),
                 "beta": RNG.standard_normal(C).astype(np.float32)}
    nodes = [node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             node("Add", ["h", "x"], ["r"], name="residual"),
             node("Mul", ["r", "gamma"], ["g"], name="scale"),
             node("Add", ["g", "beta"], ["b"], name="shift"),
             node("MatMul", ["b", "w2"], ["y"], name="fc2")]
    return build(nodes, [("x", np.float32, [1, S, C])], [("y", np.float32, [1, S, 4])],
                 constants)


def _feed():  # type: ignore[no-untyped-def]
    return {"x": RNG.standard_normal((1, S, C)).astype(np.float32)}


def test_a_token_tensors_scale_and_shift_run_on_the_vector_unit():
    model = _no_norm_model()
    feeds = [_feed() for _ in range(8)]
    integer, report = run_passes(model, calibration=feeds)
    ops = [n.op_type for n in integer.graph.nodes]
    assert ops.count("QMul") == 1 and ops.count("QAdd") == 2  # the residual and the shift
    assert "Mul" not in ops and "Add" not in ops
    constants = constants_of(integer.graph)
    qmul = next(n for n in integer.graph.nodes if n.op_type == "QMul")
    b = constants.get(qmul.inputs[1])
    assert b is not None and b.shape == (C,) and b.dtype == np.int8
    assert report.fate("scale").into.startswith("systolic.QMul")
    compiled = compile_model(integer, ArrayConfig(rows=4, cols=4))
    units = [layer.unit for layer in compiled.layers if layer.op in ("QMul", "QAdd")]
    assert units == [LayerUnit.VECTOR] * 3
    feed = _feed()
    assert check_layers(compiled, feed, backend="model") is None
    y_int, y_float = run_model(integer, feed)["y"], run_model(model, feed)["y"]
    cosine = float(np.sum(y_int * y_float) / np.linalg.norm(y_int) / np.linalg.norm(y_float))
    assert cosine > 0.99


@pytest.mark.parametrize(("shape", "found"), [((C,), True), ((1, 1, C), True), ((1, C), True),
                                              ((S, C), False), ((1,), False)])
def test_the_last_axis_vector_of_a_rank_3_tensor(shape, found):
    """A vector along the last axis (leading 1s allowed) is one; a whole-tensor constant
    [S, C] (constant_operand_ptq's) and a scalar (an activation table) are not."""
    c = RNG.uniform(0.5, 2, shape).astype(np.float32)
    model = build([node("Relu", ["x"], ["a"]), node("Mul", ["a", "c"], ["y"])],
                  [("x", np.float32, [1, S, C])], [("y", np.float32, [1, S, C])], {"c": c})
    graph = model.graph
    mul = graph.nodes[1]
    assert (channel_vector_index(mul, graph, constants_of(graph)) == 1) is found


def test_a_non_finite_vector_is_not_one():
    c = np.full(C, np.inf, np.float32)
    model = build([node("Relu", ["x"], ["a"]), node("Add", ["a", "c"], ["y"])],
                  [("x", np.float32, [1, S, C])], [("y", np.float32, [1, S, C])], {"c": c})
    graph = model.graph
    assert channel_vector_index(graph.nodes[1], graph, constants_of(graph)) is None


def test_a_products_bias_is_not_a_vector_op():
    """MatMul -> Add(bias [C]): the bias belongs to the product (quantize_float fuses it into
    the QMatMul's output stage), so it is not a QAdd of its own."""
    constants = {"w": RNG.standard_normal((C, C)).astype(np.float32),
                 "bias": RNG.standard_normal(C).astype(np.float32)}
    model = build([node("MatMul", ["x", "w"], ["h"], name="fc"),
                   node("Add", ["h", "bias"], ["y"], name="bias_add")],
                  [("x", np.float32, [1, S, C])], [("y", np.float32, [1, S, C])], constants)
    graph = model.graph
    assert channel_vector_index(graph.nodes[1], graph, constants_of(graph)) is None
    integer, _ = run_passes(model, calibration=[_feed() for _ in range(4)])
    assert [n.op_type for n in integer.graph.nodes].count("QAdd") == 0
