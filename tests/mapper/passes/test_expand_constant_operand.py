"""expand_constant_operand: a quantized constant an Add/Mul broadcasts over a computed operand
takes that operand's rank (a group norm's [C, 1] scale -> [1, C, 1]) or whole shape (an
attention bias [H, S, S] -> [1, H, S, S], [1, H, S, S] -> [B, H, S, S]); the model computes
exactly what it did, and the sum becomes a QAdd."""

import numpy as np
import pytest

from systolic.mapper.passes.expand_constant_operand import (
    MAX_EXPANDED_BYTES,
    expand_constant_operand,
    expand_float_constant,
    expanded_shape,
)
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node


def _model(x_shape, c_value, reader="Add"):  # type: ignore[no-untyped-def]
    """x -> Q -> DQ -> reader(., DQ(c)) -> Q -> DQ -> y, c an int8 constant."""
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             node("DequantizeLinear", ["cq", "cs", "cz"], ["c"]),
             node(reader, ["xd", "c"], ["sum"]),
             node("QuantizeLinear", ["sum", "ys", "yz"], ["yq"]),
             node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    constants = {"s": np.array(0.05, np.float32), "z": np.array(3, np.int8),
                 "cs": np.array(0.02, np.float32), "cz": np.array(-2, np.int8),
                 "ys": np.array(0.07, np.float32), "yz": np.array(1, np.int8),
                 "cq": c_value.astype(np.int8)}
    return make(nodes, [("x", np.float32, x_shape)], [("y", np.float32, x_shape)], constants)[1]


def _expand(model):  # type: ignore[no-untyped-def]
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    return finalize(expand_constant_operand(model, report))


def _constant_of(model, dq_output="c"):  # type: ignore[no-untyped-def]
    dq = next(n for n in model.graph.nodes if n.outputs[0] == dq_output)
    return model.graph.initializer(dq.inputs[0]).data


@pytest.mark.parametrize(("constant", "other", "shape"), [
    ((4, 6, 6), (1, 4, 6, 6), (1, 4, 6, 6)),  # LeViT's attention bias: rank only
    ((1, 3, 5, 5), (4, 3, 5, 5), (4, 3, 5, 5)),  # Swin's bias over the windows: copied
    ((8, 1), (1, 8, 30), (1, 8, 1)),  # wav2vec2's group norm scale: per channel
    ((30,), (1, 8, 30), None),  # along the last axis: fused as it is
    ((1, 8, 30), (1, 8, 30), None),  # the operand's own shape
    ((3, 1), (1, 8, 30), None),  # not broadcast to the operand
    ((1, 1, 1, 30), (1, 8, 30), None),  # more axes than the operand
    ((1, 1), (1, 8, 30), None),  # one element: part of a table
])
def test_expanded_shape(constant, other, shape):  # type: ignore[no-untyped-def]
    assert expanded_shape(constant, other) == shape


def test_a_constant_above_the_size_limit_keeps_its_shape():
    other = (MAX_EXPANDED_BYTES + 1, 2)
    assert expanded_shape((1, 2, 1), (1, *other)) is None  # not broadcast (rank 3 > 2)
    assert expanded_shape((1, 1), (MAX_EXPANDED_BYTES + 1, 2)) is None


@pytest.mark.parametrize(("x_shape", "c_shape", "reader"), [
    ((1, 4, 6, 6), (4, 6, 6), "Add"),
    ((4, 3, 5, 5), (1, 3, 5, 5), "Add"),
    ((1, 8, 30), (8, 1), "Mul"),
])
def test_the_model_computes_what_it_did(x_shape, c_shape, reader):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    c = rng.integers(-128, 128, c_shape)
    model = _model(x_shape, c, reader)
    expanded = _expand(model)
    new = _constant_of(expanded)
    assert new.ndim == len(x_shape)
    np.testing.assert_array_equal(np.broadcast_to(new, x_shape), np.broadcast_to(c, x_shape))
    feed = {"x": rng.normal(0, 2, x_shape).astype(np.float32)}
    np.testing.assert_array_equal(run_model(expanded, feed)["y"], run_model(model, feed)["y"])


@pytest.mark.parametrize(("x_shape", "c_shape", "reader", "fused"), [
    ((1, 6, 6), (6, 6), "Add", "QAdd"),  # an attention bias of one head
    ((1, 8, 30), (8, 1), "Mul", "QMul"),  # a group norm's scale
])
def test_the_sum_or_product_becomes_a_systolic_op(x_shape, c_shape, reader, fused):  # type: ignore[no-untyped-def]
    """With the pipeline: fused (on the host before: "a per-channel constant is not one
    table")."""
    c = np.random.default_rng(8).integers(-128, 128, c_shape)
    integer, _ = run_passes(_model(x_shape, c, reader))
    assert fused in [n.op_type for n in integer.graph.nodes]


def _two_shapes_model(c_value):  # type: ignore[no-untyped-def]
    """DQ(c) multiplied into a [1, 4, 6, 8] and a [1, 2, 6, 8] operand (a rotary table beside
    the queries and, under grouped-query attention, the keys)."""
    nodes = [node("DequantizeLinear", ["cq", "cs", "cz"], ["c"]),
             node("Mul", ["a", "c"], ["y1"]), node("Mul", ["b", "c"], ["y2"]),
             node("Mul", ["a2", "c"], ["y3"])]
    constants = {"cq": c_value.astype(np.int8), "cs": np.array(0.02, np.float32),
                 "cz": np.array(-3, np.int8)}
    shapes = [(1, 4, 6, 8), (1, 2, 6, 8), (1, 4, 6, 8)]
    return make(nodes, [(n, np.float32, s) for n, s in zip(("a", "b", "a2"), shapes)],
                [(n, np.float32, s) for n, s in zip(("y1", "y2", "y3"), shapes)],
                constants)[1]


def test_a_constant_with_readers_of_two_shapes_gets_a_copy_per_shape():
    """One expanded copy (and its DequantizeLinear) per operand shape; exact."""
    rng = np.random.default_rng(3)
    c = rng.integers(-128, 128, (1, 1, 6, 8))
    model = _two_shapes_model(c)
    expanded = _expand(model)
    readers = {n.outputs[0]: n for n in expanded.graph.nodes if n.op_type == "Mul"}
    shapes = {out: _constant_of(expanded, readers[out].inputs[1]).shape for out in readers}
    assert shapes == {"y1": (1, 4, 6, 8), "y2": (1, 2, 6, 8), "y3": (1, 4, 6, 8)}
    assert readers["y1"].inputs[1] == readers["y3"].inputs[1] != readers["y2"].inputs[1]
    feed = {n: rng.normal(0, 1, s).astype(np.float32)
            for n, s in (("a", (1, 4, 6, 8)), ("b", (1, 2, 6, 8)), ("a2", (1, 4, 6, 8)))}
    want, got = run_model(model, feed), run_model(expanded, feed)
    for out in ("y1", "y2", "y3"):
        np.testing.assert_array_equal(got[out], want[out])


def test_a_constant_with_a_reader_other_than_add_or_mul_is_left_alone():
    nodes = [node("DequantizeLinear", ["cq", "cs", "cz"], ["c"]),
             node("Add", ["a", "c"], ["y1"]), node("Relu", ["c"], ["y2"])]
    constants = {"cq": np.ones((4, 6, 6), np.int8), "cs": np.array(0.02, np.float32),
                 "cz": np.array(0, np.int8)}
    _, model = make(nodes, [("a", np.float32, (1, 4, 6, 6))],
                    [("y1", np.float32, (1, 4, 6, 6)), ("y2", np.float32, (4, 6, 6))],
                    constants)  # fmt: skip
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert expand_constant_operand(model, report) is model


def _float_model(x_shape, c_value, reader):  # type: ignore[no-untyped-def]
    """A float model: x -> 1x1 Conv (rank 4) or MatMul (rank 3) -> reader(., c) -> y, c a
    float constant."""
    rng = np.random.default_rng(4)
    if len(x_shape) == 4:
        first = node("Conv", ["x", "w"], ["h"])
        w = rng.normal(0, 0.5, (x_shape[1], x_shape[1], 1, 1))
    else:
        first = node("MatMul", ["x", "w"], ["h"])
        w = rng.normal(0, 0.5, (x_shape[-1], x_shape[-1]))
    constants = {"w": w.astype(np.float32), "c": c_value.astype(np.float32)}
    return make([first, node(reader, ["h", "c"], ["y"])], [("x", np.float32, x_shape)],
                [("y", np.float32, x_shape)], constants)[1]


@pytest.mark.parametrize(("x_shape", "c_shape", "reader"), [
    ((1, 8, 30), (8, 1), "Mul"),  # a group norm's scale: per channel once padded
    ((4, 3, 5, 5), (1, 3, 5, 5), "Add"),  # Swin's bias over the windows
])
def test_a_float_constant_takes_its_operands_rank_or_shape(x_shape, c_shape, reader):  # type: ignore[no-untyped-def]
    """Exact; whether the quantizer then fuses it is channel_affine_ptq's and quantize_float's
    (a rank-3 per-channel constant, a bias after a product of two computed tensors)."""
    rng = np.random.default_rng(9)
    model = _float_model(x_shape, rng.normal(0, 1, c_shape), reader)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    expanded = finalize(expand_float_constant(model, report))
    op = next(n for n in expanded.graph.nodes if n.outputs[0] == "y")
    new = expanded.graph.initializer(op.inputs[1]).data
    assert new.ndim == len(x_shape)
    assert new.shape == (x_shape if reader == "Add" else (1, 8, 1))
    feed = {"x": rng.normal(0, 2, x_shape).astype(np.float32)}
    np.testing.assert_array_equal(run_model(expanded, feed)["y"], run_model(model, feed)["y"])


def test_a_float_constant_with_readers_of_two_shapes_gets_a_copy_per_shape():
    """A rotary embedding's cos table [1, 1, S, D] times queries [1, 4, S, D] and keys
    [1, 2, S, D]: a copy per shape, each of its operand's shape (exact)."""
    rng = np.random.default_rng(6)
    nodes = [node("Mul", ["a", "c"], ["y1"]), node("Mul", ["b", "c"], ["y2"])]
    shapes = [(1, 4, 6, 8), (1, 2, 6, 8)]
    _, model = make(nodes, [(n, np.float32, s) for n, s in zip(("a", "b"), shapes)],
                    [(n, np.float32, s) for n, s in zip(("y1", "y2"), shapes)],
                    {"c": rng.normal(0, 1, (1, 1, 6, 8)).astype(np.float32)})
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    expanded = finalize(expand_float_constant(model, report))
    for mul, shape in zip(expanded.graph.nodes, shapes):
        assert expanded.graph.initializer(mul.inputs[1]).data.shape == shape
    feed = {"a": rng.normal(0, 1, shapes[0]).astype(np.float32),
            "b": rng.normal(0, 1, shapes[1]).astype(np.float32)}
    want, got = run_model(model, feed), run_model(expanded, feed)
    for out in ("y1", "y2"):
        np.testing.assert_array_equal(got[out], want[out])
