"""The reference Scan against onnx's ReferenceEvaluator (forward, axis 0: what it implements)
and onnxruntime (both directions, both axes, negative axes, Scan-8's batch and
sequence_lens), every since_version; inference; malformed attributes."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import make_op, run_model
from systolic.reference.ops.base import TensorInfo

from ....support.loop_scan_models import scan_sum


def _ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(run_model(load_model_bytes(model.SerializeToString()), feeds).values())


def _same(ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    for value, expected in zip(ours, theirs, strict=True):
        assert value.dtype == expected.dtype and value.shape == expected.shape
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


def _feeds(shape: tuple[int, ...], seed: int = 0) -> dict[str, np.ndarray]:
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return {"s0": np.zeros(shape[-1] if len(shape) == 2 and shape[0] == 5 else 4, np.float32),
            "x": x}


@pytest.mark.parametrize("opset", [9, 11, 16, 19, 21, 23])
def test_forward_scan_as_onnx(opset: int) -> None:
    model = scan_sum(opset=opset, matmul=True)
    feeds = _feeds((5, 4))
    _same(_ours(model, feeds), ReferenceEvaluator(model).run(None, feeds))


@pytest.mark.parametrize("input_axis", [0, 1, -1])
@pytest.mark.parametrize("reverse_in", [False, True])
@pytest.mark.parametrize(("output_axis", "reverse_out"), [(0, True), (1, False), (1, True)])
def test_axes_and_directions_as_onnxruntime(input_axis: int, reverse_in: bool,
                                            output_axis: int, reverse_out: bool) -> None:
    model = scan_sum(input_axis=input_axis, reverse_in=reverse_in, output_axis=output_axis,
                     reverse_out=reverse_out, matmul=True)
    feeds = _feeds((5, 4) if input_axis == 0 else (4, 5), seed=input_axis + 7)
    _same(_ours(model, feeds), ort.InferenceSession(model.SerializeToString()).run(None, feeds))


def test_negative_axis_before_scan_11_is_refused() -> None:
    model = scan_sum(opset=11, input_axis=-1)
    model.opset_import[0].version = 9
    with pytest.raises(ModelError, match=r"negative axis \(allowed from Scan-11\)"):
        _ours(model, _feeds((4, 5)))


def _scan8(lens: bool) -> onnx.ModelProto:
    """Scan-8: s [2, 3] state per batch entry, x [2, 4, 3]; s = s + x_t, output s."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "xt"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["o"])], "body",
        [helper.make_tensor_value_info("s_in", f, [3]),
         helper.make_tensor_value_info("xt", f, [3])],
        [helper.make_tensor_value_info("s_out", f, [3]),
         helper.make_tensor_value_info("o", f, [3])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["lens" if lens else "", "s0", "x"], ["sf", "os"],
                          body=body, num_scan_inputs=1, directions=[1])], "g",
        [helper.make_tensor_value_info("lens", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("s0", f, [2, 3]),
         helper.make_tensor_value_info("x", f, [2, 4, 3])],
        [helper.make_tensor_value_info("sf", f, [2, 3]),
         helper.make_tensor_value_info("os", f, [2, 4, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 3
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("lens", [False, True])
def test_scan_8_batch_and_sequence_lens_as_onnxruntime(lens: bool) -> None:
    model = _scan8(lens)
    x = np.random.default_rng(3).standard_normal((2, 4, 3)).astype(np.float32)
    feeds = {"lens": np.array([4, 2], np.int64), "s0": np.ones((2, 3), np.float32), "x": x}
    ours = _ours(model, feeds)
    _same(ours, ort.InferenceSession(model.SerializeToString()).run(None, feeds))
    if lens:  # the second entry stops after 2 steps: its last outputs are zeros
        assert not ours[1][1, 2:].any()


def test_inference() -> None:
    graph = load_model_bytes(scan_sum(input_axis=1, output_axis=1, matmul=True)
                             .SerializeToString()).graph
    op = make_op(graph.nodes[0], {"": 17})
    outer = {"W": TensorInfo(DataType.FLOAT, (4, 4)), "two": TensorInfo(DataType.FLOAT, ())}
    results = op.infer([TensorInfo(DataType.FLOAT, (4,)), TensorInfo(DataType.FLOAT, (4, 5)),
                        *(outer[name] for name in graph.nodes[0].captures)])
    assert [r.shape for r in results] == [(4,), (4, 5)]


def test_scan_inputs_of_different_lengths_are_refused() -> None:
    graph = load_model_bytes(scan_sum(matmul=True).SerializeToString()).graph
    node = graph.nodes[0]
    two = type(node)("Scan", node.inputs, node.outputs, attrs=type(node.attrs)(
        {"body": node.attrs["body"], "num_scan_inputs": 2}))  # s0 scanned too
    op = make_op(two, {"": 17})
    outer = {"W": np.zeros((4, 4), np.float32), "two": np.array(2.0, np.float32)}
    with pytest.raises(ModelError, match=r"different lengths \[4, 5\]"):
        op.run([np.zeros((4,), np.float32), np.zeros((5, 4), np.float32),
                *(outer[name] for name in node.captures)])
