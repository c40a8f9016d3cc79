"""LRN as Mul(x, x) -> banded 1x1 Conv -> Pow -> Mul, which the accelerator runs."""

import numpy as np
import pytest

from systolic.mapper.passes.decompose_lrn import decompose_lrn, window_weights
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .model_builder import build, node


def _lrn_model(shape, size, alpha=1e-3, beta=0.75, bias=2.0):  # type: ignore[no-untyped-def]
    nodes = [node("LRN", ["x"], ["y"], name="lrn", size=size, alpha=alpha, beta=beta,
                  bias=bias)]
    return build(nodes, [("x", np.float32, list(shape))], [("y", np.float32, list(shape))],
                 opset=9)


def test_the_window_follows_onnx() -> None:
    """size 4: one channel before, two after (floor and ceil of (size - 1) / 2)."""
    w = window_weights(5, 4, 4.0)[:, :, 0, 0]
    assert w.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [0, 1, 1, 1, 1],
                          [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]]


@pytest.mark.parametrize(("shape", "size"), [((2, 7, 4, 3), 5), ((1, 6, 5, 5), 4),
                                             ((1, 5, 9), 3), ((1, 3, 2, 2), 1)])
def test_the_rewrite_computes_lrn(shape, size) -> None:  # type: ignore[no-untyped-def]
    model = _lrn_model(shape, size)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    rewritten = finalize(decompose_lrn(model, report))
    assert [n.op_type for n in rewritten.graph.nodes] == ["Mul", "Conv", "Pow", "Mul"]
    x = (np.random.default_rng(size).standard_normal(shape) * 5).astype(np.float32)
    np.testing.assert_allclose(run_model(rewritten, {"x": x})["y"],
                               run_model(model, {"x": x})["y"], rtol=2e-6, atol=1e-7)


def test_a_float_model_runs_lrn_on_the_accelerator() -> None:
    rng = np.random.default_rng(1)
    nodes = [node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             node("Relu", ["a"], ["r"], name="relu"),
             node("LRN", ["r"], ["n"], name="lrn", size=5, alpha=1e-2, beta=0.75, bias=1.0),
             node("Conv", ["n", "w2"], ["y"], name="conv2")]
    constants = {"w1": rng.standard_normal((8, 3, 3, 3)).astype(np.float32),
                 "w2": rng.standard_normal((4, 8, 1, 1)).astype(np.float32)}
    model = build(nodes, [("x", np.float32, [1, 3, 6, 6])], [("y", np.float32, [1, 4, 6, 6])],
                  constants, opset=9)
    integer, report = run_passes(model, seed=0)
    ops = [n.op_type for n in integer.graph.nodes]
    assert "LRN" not in ops and ops.count("QConv") == 3 and "QMul" in ops
    assert ops.count("QTable") == 2  # x^2 and d^-beta
    assert report.fate("lrn").into.startswith("systolic.QMul")


def test_a_quantized_model_keeps_its_lrn() -> None:
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
             node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
             node("LRN", ["d"], ["y"], name="lrn", size=3)]
    model = build(nodes, [("x", np.float32, [1, 4, 2, 2])], [("y", np.float32, [1, 4, 2, 2])],
                  {"s": np.float32(0.1), "z": np.uint8(128)}, opset=13)
    report = PassReport((n.label, n.op_id) for n in model.graph.nodes)
    assert decompose_lrn(model, report) is model
