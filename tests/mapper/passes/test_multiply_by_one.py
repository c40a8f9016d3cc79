"""multiply_by_one: Mul(x, ones), Mul(ones, x) and Div(x, ones) that keep x's shape are x;
a constant that broadcasts x larger, a Div by ones as the dividend, a constant that is not
all ones, or a product that is a graph output stays."""

import numpy as np
import pytest

from systolic.mapper.passes.multiply_by_one import drop_products_by_one
from systolic.mapper.passes.report import REMOVED, PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types


def _model(op, inputs, one, *, out_shape=(2, 3)):  # type: ignore[no-untyped-def]
    """x [2, 3] -> op(inputs) -> p -> Relu -> y; `one` the constant named "one"."""
    nodes = [node(op, inputs, ["p"], name="product"), node("Relu", ["p"], ["y"], name="relu")]
    return make(nodes, [("x", np.float32, (2, 3))], [("y", np.float32, out_shape)],
                {"one": one})[1]


def _report(model):  # type: ignore[no-untyped-def]
    return PassReport((n.name, n.op_id) for n in model.graph.nodes)


def _feed():  # type: ignore[no-untyped-def]
    return {"x": np.array([[-0.0, 1.5, -2.0], [np.inf, -np.inf, 3.25]], np.float32)}


@pytest.mark.parametrize(("op", "inputs", "one"), [
    ("Mul", ["x", "one"], np.float32(1.0)),
    ("Mul", ["one", "x"], np.ones((1, 3), np.float32)),
    ("Div", ["x", "one"], np.ones((2, 3), np.float32)),
])
def test_a_product_by_one_is_its_other_input(op, inputs, one):  # type: ignore[no-untyped-def]
    model = _model(op, inputs, one)
    report = _report(model)
    done = drop_products_by_one(model, report)
    assert op_types(done) == ["Relu"]
    assert done.graph.nodes[0].inputs == ("x",)
    assert report.fate("product").action == REMOVED
    want, got = run_model(model, _feed())["y"], run_model(done, _feed())["y"]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))  # bit for bit


@pytest.mark.parametrize(("op", "inputs", "one", "out_shape"), [
    ("Mul", ["x", "one"], np.ones((4, 2, 3), np.float32), (4, 2, 3)),  # broadcasts x larger
    ("Div", ["one", "x"], np.float32(1.0), (2, 3)),  # 1 / x
    ("Mul", ["x", "one"], np.float32(0.5), (2, 3)),
])
def test_other_products_stay(op, inputs, one, out_shape):  # type: ignore[no-untyped-def]
    model = _model(op, inputs, one, out_shape=out_shape)
    assert drop_products_by_one(model, _report(model)) is model


def test_a_product_that_is_a_graph_output_stays():  # type: ignore[no-untyped-def]
    nodes = [node("Mul", ["x", "one"], ["y"], name="product")]
    model = make(nodes, [("x", np.float32, (2, 3))], [("y", np.float32, (2, 3))],
                 {"one": np.float32(1.0)})[1]
    assert drop_products_by_one(model, _report(model)) is model
