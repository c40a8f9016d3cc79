"""The reference Loop against onnx's ReferenceEvaluator and onnxruntime: counted loops with
carried values, scan outputs and outer values read by name, while loops stopped by the body's
condition (alone and with a trip count), zero iterations, every since_version; inference."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

from systolic.errors import ModelError
from systolic.ir import Attrs, DataType
from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import make_op, run_model
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning

from ....support.loop_scan_models import counted_loop, while_loop


def _ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(run_model(load_model_bytes(model.SerializeToString()), feeds).values())


def _same(ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    for value, expected in zip(ours, theirs, strict=True):
        assert value.dtype == expected.dtype and value.shape == expected.shape
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


def _row(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 4)).astype(np.float32)


@pytest.mark.parametrize("opset", [11, 13, 16, 19, 21, 23])
@pytest.mark.parametrize("trips", [1, 3])
def test_counted_loop_with_scan_output_as_onnxruntime(opset: int, trips: int) -> None:
    # (onnx's ReferenceEvaluator concatenates scan outputs instead of stacking them: the
    # spec's [trips, 1, 4] is onnxruntime's)
    model = counted_loop(trips, opset=min(opset, 21))
    feeds = {"x": _row(1), "y0": _row(2)}
    theirs = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    ours = _ours(counted_loop(trips, opset=opset), feeds)
    assert ours[1].shape == (trips, 1, 4)
    _same(ours, theirs)


@pytest.mark.parametrize("with_trips", [False, True])
@pytest.mark.parametrize(("limit", "start"), [(100.0, True), (1.0, True), (100.0, False)])
def test_while_loop_as_onnx(with_trips: bool, limit: float, start: bool) -> None:
    model = while_loop(with_trips=with_trips)
    feeds = {"s0": np.ones(3, np.float32), "limit": np.array(limit, np.float32),
             "start": np.array(start)}
    ours = _ours(model, feeds)
    _same(ours, ReferenceEvaluator(model).run(None, feeds))
    _same(ours, ort.InferenceSession(model.SerializeToString()).run(None, feeds))
    # 1+2+... : sums 9, 21, 45, 93, 189: five iterations reach 100; M=2 stops at two;
    # a limit of 1 stops after the first; a false start runs none
    expected = 0 if not start else 1 if limit == 1.0 else 2 if with_trips else 5
    assert int(ours[1]) == expected


def test_loop_without_trip_count_or_condition_is_refused() -> None:
    model = while_loop()
    model.graph.node[0].input[1] = ""
    feeds = {"s0": np.ones(3, np.float32), "limit": np.array(9.0, np.float32),
             "start": np.array(True)}
    with pytest.raises(ModelError, match="neither a trip count M nor a condition"):
        _ours(model, feeds)


def _loop_op(model: onnx.ModelProto):
    graph = load_model_bytes(model.SerializeToString()).graph
    return make_op(graph.nodes[0], {"": 17})


def test_inference_of_a_counted_loop() -> None:
    op = _loop_op(counted_loop(3))
    row = TensorInfo(DataType.FLOAT, (1, 4))
    m = TensorInfo(DataType.INT64, (), np.array(3, np.int64))
    c = TensorInfo(DataType.BOOL, (), np.array(True))
    weight = TensorInfo(DataType.FLOAT, (4, 4))
    final, steps = op.infer([m, c, row, weight, row])  # captures: W, x
    assert (final.shape, steps.shape) == ((1, 4), (3, 1, 4))
    unknown = TensorInfo(DataType.INT64, ())
    with pytest.raises(ShapeKnownWhenRunning, match="trip count is known only when running"):
        op.infer([unknown, c, row, weight, row])


def test_inference_of_a_while_loop_keeps_carried_types() -> None:
    op = _loop_op(while_loop())
    s = TensorInfo(DataType.FLOAT, (3,))
    results = op.infer([None, TensorInfo(DataType.BOOL, ()), s,
                        TensorInfo(DataType.INT64, ()), TensorInfo(DataType.FLOAT, ())])
    assert [(r.dtype, r.shape) for r in results] == [(DataType.FLOAT, (3,)),
                                                      (DataType.INT64, ())]


def test_a_body_without_the_condition_is_refused() -> None:
    graph = load_model_bytes(counted_loop(2).SerializeToString()).graph
    body = graph.nodes[0].attrs["body"]
    short = type(body)(body.name, body.inputs[:1], body.outputs, body.nodes)
    with pytest.raises(ModelError, match="must take the iteration number and the condition"):
        make_op(type(graph.nodes[0])("Loop", (), ("y",), attrs=Attrs({"body": short})),
                {"": 17})


def _scan_only_loop(opset: int, check: bool = True) -> onnx.ModelProto:
    """Loop(M=4, "") with no carried values: the scan output stacks x * i."""
    h, tp = onnx.helper, onnx.TensorProto
    body = h.make_graph(
        [h.make_node("Cast", ["i"], ["fi"], to=tp.FLOAT),
         h.make_node("Mul", ["x", "fi"], ["step"]),
         h.make_node("Identity", ["c_in"], ["c_out"])], "body",
        [h.make_tensor_value_info("i", tp.INT64, []), h.make_tensor_value_info("c_in", tp.BOOL, [])],
        [h.make_tensor_value_info("c_out", tp.BOOL, []),
         h.make_tensor_value_info("step", tp.FLOAT, [3])])
    graph = h.make_graph(
        [h.make_node("Loop", ["M", ""], ["steps"], body=body)], "g",
        [h.make_tensor_value_info("x", tp.FLOAT, [3])],
        [h.make_tensor_value_info("steps", tp.FLOAT, [4, 3])],
        [onnx.numpy_helper.from_array(np.array(4, np.int64), "M")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    if check:
        onnx.checker.check_model(model, full_check=True)
    return model


def test_a_loop_without_carried_values_from_version_11() -> None:
    model = _scan_only_loop(13)
    feeds = {"x": np.array([1.0, -2.0, 0.5], np.float32)}
    _same(_ours(model, feeds), ort.InferenceSession(model.SerializeToString()).run(None, feeds))
    with pytest.raises(ModelError, match=r"names 2 input\(s\) but the operator takes 3 or more"):
        _ours(_scan_only_loop(9, check=False), feeds)  # (the checker refuses it too)
