"""group_norm: GroupNormalization (opset 18: scale and bias per group; 21: per channel) of
constant scale and bias becomes Reshape -> InstanceNormalization -> Reshape -> Mul -> Add, the
same function, and runs on the accelerator (one QLayerNorm; the per-channel scale and bias a
QMul and a QAdd)."""

import numpy as np
import pytest

from systolic.mapper.passes.group_norm import group_norm_to_instance_norm
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

C, H, W = 4, 3, 5


def _model(groups, opset, *, neutral=False):  # type: ignore[no-untyped-def]
    """Conv -> GroupNormalization -> Conv (float)."""
    rng = np.random.default_rng(5)
    entries = groups if opset == 18 else C
    constants = {"w1": rng.normal(0, 0.3, (C, 2, 3, 3)).astype(np.float32),
                 "w2": rng.normal(0, 0.3, (C, C, 1, 1)).astype(np.float32),
                 "s": (np.ones(entries) if neutral else np.linspace(0.5, 2, entries)
                       ).astype(np.float32),
                 "b": (np.zeros(entries) if neutral else np.linspace(-1, 1, entries)
                       ).astype(np.float32)}
    nodes = [node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
             node("GroupNormalization", ["c", "s", "b"], ["g"], num_groups=groups,
                  epsilon=1e-5),
             node("Conv", ["g", "w2"], ["y"])]
    return make(nodes, [("x", np.float32, (1, 2, H, W))], [("y", np.float32, (1, C, H, W))],
                constants, opset=opset)[1]


def _feed():  # type: ignore[no-untyped-def]
    return {"x": np.random.default_rng(6).normal(0, 1, (1, 2, H, W)).astype(np.float32)}


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("groups", [1, 2, C])
def test_the_same_function(opset, groups):  # type: ignore[no-untyped-def]
    model = _model(groups, opset)
    rewritten = finalize(group_norm_to_instance_norm(model, PassReport()))
    assert "GroupNormalization" not in op_types(rewritten)
    assert "InstanceNormalization" in op_types(rewritten)
    np.testing.assert_allclose(run_model(rewritten, _feed())["y"], run_model(model, _feed())["y"],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("groups", [1, 2])
def test_it_runs_on_the_accelerator(groups):  # type: ignore[no-untyped-def]
    fused, _ = run_passes(_model(groups, 21))
    types = op_types(fused)
    assert "GroupNormalization" not in types and types.count("QLayerNorm") == 1
    assert "QMul" in types and "QAdd" in types
    assert types.count("Transpose") == (2 if groups == 1 else 4)  # norm_row_order
    want, got = run_model(_model(groups, 21), _feed())["y"], run_model(fused, _feed())["y"]
    cosine = float(np.dot(want.ravel(), got.ravel())
                   / (np.linalg.norm(want) * np.linalg.norm(got)))
    assert cosine > 0.99


def test_a_computed_scale_stays():  # type: ignore[no-untyped-def]
    nodes = [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)]
    _, model = make(nodes, [("x", np.float32, (1, C, H, W)), ("s", np.float32, (C,))],
                    [("y", np.float32, (1, C, H, W))], {"b": np.zeros(C, np.float32)}, opset=21)
    assert group_norm_to_instance_norm(model, PassReport()) is model
