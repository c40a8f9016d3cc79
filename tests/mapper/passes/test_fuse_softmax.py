"""fuse_softmax: DQ -> Softmax -> Q (opset 13 over the last axis, opset 11's 2-D coercion) and
QLinearSoftmax become systolic.QSoftmax within one output step of the float softmax of the
quantized input (onnx's ReferenceEvaluator) and of onnxruntime's QLinearSoftmax; an inner
axis and an unquantized result stay on the host with the reason; a float model's Softmax is
quantized by quantize_float and becomes QSoftmax too."""

import numpy as np
import pytest

from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .table_models import make, node, op_types, steps

U8 = np.uint8


def _qdq_softmax(shape, *, opset=20, axis=None, x_type=U8, y_type=U8):  # type: ignore[no-untyped-def]
    attrs = {} if axis is None else {"axis": axis}
    nodes = [node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
             node("Softmax", ["xf"], ["p"], **attrs),
             node("QuantizeLinear", ["p", "sy", "zy"], ["y"])]  # fmt: skip
    y_zero = 0 if y_type == U8 else -128
    constants = {"sx": np.float32(0.07), "zx": np.array(100 if x_type == U8 else -3, x_type),
                 "sy": np.float32(1 / 256), "zy": np.array(y_zero, y_type)}
    return make(nodes, [("x", x_type, shape)], [("y", y_type, shape)], constants, opset=opset)


def _feed(shape, x_type=U8, seed=0):  # type: ignore[no-untyped-def]
    info = np.iinfo(x_type)
    return {"x": np.random.default_rng(seed).integers(info.min, int(info.max) + 1, shape)
            .astype(x_type)}  # fmt: skip


@pytest.mark.parametrize("case", [
    {"shape": (2, 3, 40)}, {"shape": (5, 9), "x_type": np.int8, "y_type": np.int8},
    {"shape": (2, 3, 7), "opset": 11, "axis": 1}, {"shape": (4, 6, 1), "axis": 1},
])  # fmt: skip
def test_qdq_softmax_becomes_qsoftmax_within_one_step(case):  # type: ignore[no-untyped-def]
    proto, model = _qdq_softmax(**case)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QSoftmax"]
    (softmax,) = [f for f in report.fates if "Softmax" in f.op_type]
    assert softmax.action == "fused" and "QSoftmax" in softmax.into
    feed = _feed(case["shape"], case.get("x_type", U8))
    if case.get("opset", 20) < 19:  # onnx's evaluator has no DequantizeLinear below 19
        diff = run_model(fused, feed)["y"].astype(int) - run_model(model, feed)["y"].astype(int)
        assert np.abs(diff).max() <= 1
        return
    onnx_diff, ours_diff = steps(proto, model, fused, feed)
    assert np.abs(onnx_diff).max() <= 1 and np.abs(ours_diff).max() <= 1


def test_an_inner_axis_runs_over_the_last_axis_between_transposes():  # type: ignore[no-untyped-def]
    """softmax_axis moves it to the last axis first (SOFTMAX normalises contiguous rows)."""
    _, model = _qdq_softmax((2, 5, 3), axis=1)
    fused, _ = run_passes(model)
    assert op_types(fused) == ["Transpose", "QSoftmax", "Transpose"]
    for seed in range(2):
        ours = run_model(fused, _feed((2, 5, 3), seed=seed))["y"].astype(np.int64)
        written = run_model(model, _feed((2, 5, 3), seed=seed))["y"].astype(np.int64)
        assert np.abs(ours - written).max() <= 1


def test_qlinear_softmax_is_within_one_step_of_onnxruntime():  # type: ignore[no-untyped-def]
    ort = pytest.importorskip("onnxruntime")
    nodes = [node("QLinearSoftmax", ["x", "sx", "zx", "sy", "zy"], ["y"], domain="com.microsoft",
                  opset=13, axis=-1)]  # fmt: skip
    constants = {"sx": np.float32(0.05), "zx": np.array(128, U8), "sy": np.float32(1 / 256),
                 "zy": np.array(0, U8)}
    proto, model = make(nodes, [("x", U8, (6, 33))], [("y", U8, (6, 33))], constants, ms=True)
    fused, _ = run_passes(model)
    assert op_types(fused) == ["QSoftmax"]
    feed = _feed((6, 33), seed=4)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, feed)[0].astype(np.int64)
    got = run_model(fused, feed)["y"].astype(np.int64)
    assert np.abs(got - want).max() <= 1


def test_a_float_softmax_is_quantized_and_fused():  # type: ignore[no-untyped-def]
    w = np.random.default_rng(0).normal(0, 0.5, (8, 12)).astype(np.float32)
    nodes = [node("MatMul", ["x", "w"], ["h"]), node("Softmax", ["h"], ["p"]),
             node("MatMul", ["p", "w2"], ["y"])]  # fmt: skip
    constants = {"w": w, "w2": np.random.default_rng(1).normal(0, 0.5, (12, 4)).astype(np.float32)}
    _, model = make(nodes, [("x", np.float32, (3, 8))], [("y", np.float32, (3, 4))], constants)
    fused, report = run_passes(model)
    assert op_types(fused).count("QSoftmax") == 1
    (softmax,) = [f for f in report.fates if "Softmax" in f.op_type]
    assert softmax.action == "fused"
