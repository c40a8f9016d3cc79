"""moments_layernorm: the E[x^2] - E[x]^2 form of a layer normalization (Flax through jax2tf:
ReduceSum * 1/H, Max(0, .), Reciprocal(Sqrt(. + eps)) * gamma, broadcast back by Reshape or
Unsqueeze) is rewritten as the decomposed form (the same function in float), which
quantization and fuse_layernorm make QLayerNorm, QMul and QAdd (over an inner axis between
two Transposes); over several axes it stays, with the reason."""

import numpy as np
import pytest

from systolic.mapper.passes.layernorm_moments import moments_layernorm
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

H = 32


def _moments(axes: tuple[int, ...], shape: tuple[int, ...], *, unsqueeze: bool):  # type: ignore[no-untyped-def]
    """MatMul -> moments-form LayerNorm over `axes` (keepdims 0, broadcast back) -> out."""
    rng = np.random.default_rng(3)
    count = int(np.prod([shape[a] for a in axes]))
    gamma_shape = [1] * len(shape)
    for axis in axes:
        gamma_shape[axis] = shape[axis]
    constants = {"w": rng.standard_normal((shape[-1], shape[-1])).astype(np.float32) / 4,
                 "axes": np.array(axes, np.int64), "inv": np.float32(1 / count),
                 "zero": np.float32(0), "eps": np.float32(1e-6),
                 "gamma": (1 + rng.standard_normal(gamma_shape) / 3).astype(np.float32),
                 "beta": (rng.standard_normal(gamma_shape) / 3).astype(np.float32),
                 "kept": np.array([d if i not in axes else 1 for i, d in enumerate(shape)],
                                  np.int64)}  # fmt: skip
    back = (lambda v, o: node("Unsqueeze", [v, "axes"], [o])) if unsqueeze else \
        (lambda v, o: node("Reshape", [v, "kept"], [o]))
    nodes = [node("MatMul", ["x", "w"], ["h"]),
             node("ReduceSum", ["h", "axes"], ["s1"], keepdims=0),
             node("Mul", ["h", "h"], ["hh"]),
             node("ReduceSum", ["hh", "axes"], ["s2"], keepdims=0),
             node("Mul", ["s2", "inv"], ["ms"]), node("Mul", ["s1", "inv"], ["mean"]),
             node("Mul", ["mean", "mean"], ["mean2"]), node("Sub", ["ms", "mean2"], ["var0"]),
             node("Max", ["zero", "var0"], ["var"]), back("var", "var_b"),
             node("Add", ["var_b", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]),
             node("Reciprocal", ["sd"], ["r"]), node("Mul", ["r", "gamma"], ["rg"]),
             back("mean", "mean_b"), node("Sub", ["h", "mean_b"], ["d"]),
             node("Mul", ["d", "rg"], ["dn"]), node("Add", ["dn", "beta"], ["y"])]  # fmt: skip
    return make(nodes, [("x", np.float32, shape)], [("y", np.float32, shape)], constants,
                opset=15)  # fmt: skip


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("unsqueeze", [False, True], ids=["reshape", "unsqueeze"])
def test_moments_form_over_the_last_axis_becomes_qlayernorm(unsqueeze):  # type: ignore[no-untyped-def]
    shape = (3, H)
    _, model = _moments((1,), shape, unsqueeze=unsqueeze)
    feed = {"x": np.random.default_rng(5).standard_normal(shape).astype(np.float32)}
    rewritten = moments_layernorm(model, PassReport())
    assert op_types(rewritten).count("ReduceMean") == 2 and "ReduceSum" not in op_types(rewritten)
    np.testing.assert_allclose(run_model(rewritten, feed)["y"], run_model(model, feed)["y"],
                               rtol=1e-4, atol=1e-4)  # fmt: skip
    fused, report = run_passes(model, calibration=[feed])
    assert op_types(fused) == ["QuantizeLinear", "QMatMul", "QLayerNorm", "QMul", "QAdd",
                               "DequantizeLinear"]
    assert all(f.action == "fused" for f in report.fates if f.op_type.endswith(("Max:13",
                                                                               "ReduceSum:13")))
    assert _cosine(run_model(fused, feed)["y"], run_model(model, feed)["y"]) > 0.995


def test_moments_form_over_an_inner_axis_is_normalized_between_transposes():  # type: ignore[no-untyped-def]
    shape = (2, H, 6)
    _, model = _moments((1,), shape, unsqueeze=False)
    feed = {"x": np.random.default_rng(6).standard_normal(shape).astype(np.float32)}
    rewritten = moments_layernorm(model, PassReport())
    np.testing.assert_allclose(run_model(rewritten, feed)["y"], run_model(model, feed)["y"],
                               rtol=1e-4, atol=1e-4)  # fmt: skip
    fused, _ = run_passes(model, calibration=[feed])
    assert op_types(fused) == ["QuantizeLinear", "QMatMul", "Transpose", "QLayerNorm", "QMul",
                               "QAdd", "Transpose", "DequantizeLinear"]
    assert _cosine(run_model(fused, feed)["y"], run_model(model, feed)["y"]) > 0.995


def test_moments_form_over_several_axes_stays_with_the_reason():  # type: ignore[no-untyped-def]
    _, model = _moments((1, 2), (2, 4, 8), unsqueeze=False)
    fused, report = run_passes(model)
    assert "QLayerNorm" not in op_types(fused) and "ReduceSum" in op_types(fused)
    sums = [f for f in report.fates if "ReduceSum" in f.op_type]
    assert len(sums) == 2 and all(f.action == "host" and "not one axis" in f.reason
                                  for f in sums)  # fmt: skip
