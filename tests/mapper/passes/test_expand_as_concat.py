"""expand_as_concat: an Expand repeating a computed float or 8-bit tensor along axes of size 1
(grouped-query attention's repeat_kv) becomes Concats of copies, exactly; once quantized the
Concat moves integers (no host Expand)."""

import numpy as np
import pytest

from systolic.mapper.passes.expand_as_concat import MAX_COPIES, expand_as_concat, repeated_axes
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import HOST, PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types


@pytest.mark.parametrize(("x", "shape", "want"), [
    ((1, 2, 1, 3, 4), (1, 2, 3, 3, 4), ((1, 2, 1, 3, 4), [(2, 3)])),  # repeat_kv
    ((2, 3), (4, 2, 3), ((1, 2, 3), [(0, 4)])),  # a new leading axis
    ((3, 1), (1, 5), ((3, 1), [(1, 5)])),  # ONNX's bidirectional broadcast
    ((1, 1, 4), (2, 3, 4), ((1, 1, 4), [(0, 2), (1, 3)])),
    ((2, 3), (2, 3), None),  # nothing repeated
    ((2, 3), (3, 3), None),  # not broadcastable
    ((1, 4), (MAX_COPIES + 1, 4), None),  # too many copies
])
def test_repeated_axes(x, shape, want):  # type: ignore[no-untyped-def]
    assert repeated_axes(x, shape) == want


def _expand_model(x_shape, target, dtype=np.float32):  # type: ignore[no-untyped-def]
    out = tuple(np.broadcast_shapes(x_shape, target))
    return make([node("Expand", ["x", "shape"], ["y"], name="expand")],
                [("x", dtype, x_shape)], [("y", dtype, out)],
                {"shape": np.array(target, np.int64)})[1]


@pytest.mark.parametrize(("x_shape", "target"), [
    ((1, 2, 1, 3, 4), (1, 2, 3, 3, 4)), ((2, 3), (4, 2, 3)), ((1, 1, 4), (2, 3, 4)),
])
def test_the_concats_compute_the_expand(x_shape, target):  # type: ignore[no-untyped-def]
    model = _expand_model(x_shape, target)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    rewritten = finalize(expand_as_concat(model, report))
    assert "Expand" not in op_types(rewritten)
    assert rewritten.graph.nodes[-1].name == "expand"  # the last Concat keeps the name
    feed = {"x": np.random.default_rng(2).normal(0, 1, x_shape).astype(np.float32)}
    np.testing.assert_array_equal(run_model(rewritten, feed)["y"], run_model(model, feed)["y"])


def test_an_expand_of_booleans_is_left_alone():
    """A mask's Expand (bool, int64): host mask arithmetic, not this pass's."""
    model = _expand_model((1, 1, 4), (2, 3, 4), np.bool_)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert expand_as_concat(model, report) is model


def test_a_quantized_repeat_kv_moves_integers():
    """DQ -> Unsqueeze'd keys [1, 2, 1, 3, 4] -> Expand -> Reshape [1, 6, 3, 4] -> Q: the
    pipeline leaves integer layout ops only (the Expand ran on the host before), equal to
    the model's result."""
    constants = {"s": np.float32(0.05), "z": np.uint8(128),
                 "shape": np.array([1, 2, 3, 3, 4], np.int64),
                 "heads": np.array([1, 6, 3, 4], np.int64)}
    nodes = [node("DequantizeLinear", ["xq", "s", "z"], ["x"]),
             node("Expand", ["x", "shape"], ["e"], name="expand"),
             node("Reshape", ["e", "heads"], ["r"], name="reshape"),
             node("QuantizeLinear", ["r", "s", "z"], ["y"], name="q")]
    _, model = make(nodes, [("xq", np.uint8, [1, 2, 1, 3, 4])],
                    [("y", np.uint8, [1, 6, 3, 4])], constants)
    integer, report = run_passes(model)
    assert "Expand" not in op_types(integer)
    assert set(op_types(integer)) <= {"Concat", "Reshape"}
    assert report.fate("expand").action != HOST
    feed = {"xq": np.random.default_rng(4).integers(0, 256, (1, 2, 1, 3, 4)).astype(np.uint8)}
    np.testing.assert_array_equal(run_model(integer, feed)["y"], run_model(model, feed)["y"])
