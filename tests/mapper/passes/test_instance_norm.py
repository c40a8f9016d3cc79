"""instance_norm: InstanceNormalization of [N, C, T] (torch's GroupNorm with a group per
channel: wav2vec2's feature extractor) becomes the decomposed layer normalization over the
last axis, then one LAYERNORM once quantized."""

import numpy as np
import pytest

from systolic.mapper.passes.instance_norm import instance_norm_to_layernorm
from systolic.mapper.passes.pipeline import finalize, run_passes
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

from .table_models import make, node, op_types

C, T = 4, 24


def _model(scale, bias, opset=14, shape=(1, C, T)):  # type: ignore[no-untyped-def]
    nodes = [node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)]
    constants = {"s": np.asarray(scale, np.float32), "b": np.asarray(bias, np.float32)}
    return make(nodes, [("x", np.float32, shape)], [("y", np.float32, shape)], constants,
                opset=opset)


def _feed(shape=(1, C, T)):  # type: ignore[no-untyped-def]
    return {"x": np.random.default_rng(8).normal(1, 3, shape).astype(np.float32)}


@pytest.mark.parametrize("opset", [14, 18])
@pytest.mark.parametrize("affine", [(np.ones(C), np.zeros(C)),
                                    (np.linspace(0.5, 2, C), np.linspace(-1, 1, C))])
def test_the_same_function_as_a_layer_normalization(opset, affine):  # type: ignore[no-untyped-def]
    _, model = _model(*affine, opset=opset)
    rewritten = finalize(instance_norm_to_layernorm(model, PassReport()))
    assert "InstanceNormalization" not in op_types(rewritten)
    np.testing.assert_allclose(run_model(rewritten, _feed())["y"], run_model(model, _feed())["y"],
                               rtol=1e-5, atol=1e-5)


def test_other_ranks_stay():  # type: ignore[no-untyped-def]
    _, model = _model(np.ones(C), np.zeros(C), shape=(1, C, 4, 6))
    assert instance_norm_to_layernorm(model, PassReport()) is model


def test_it_runs_as_one_layernorm():  # type: ignore[no-untyped-def]
    _, model = _model(np.ones(C), np.zeros(C))
    fused, _ = run_passes(model)
    assert op_types(fused).count("QLayerNorm") == 1


def _qdq_model(scale_q, bias_q):  # type: ignore[no-untyped-def]
    """DQ(x) -> InstanceNormalization(DQ(scale), DQ(B)) -> Q, as onnxruntime's static QDQ
    quantizer writes a GroupNorm's normalization (scale 1, B 0 quantized too)."""
    nodes = [node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
             node("DequantizeLinear", ["sq", "ss", "zs"], ["sf"]),
             node("DequantizeLinear", ["bq", "sb", "zb"], ["bf"]),
             node("InstanceNormalization", ["xf", "sf", "bf"], ["n"], epsilon=1e-5),
             node("QuantizeLinear", ["n", "sy", "zy"], ["y"])]
    constants = {"sx": np.float32(0.05), "zx": np.uint8(120), "sq": np.asarray(scale_q, np.uint8),
                 "ss": np.float32(1 / 255), "zs": np.uint8(0), "bq": np.asarray(bias_q, np.uint8),
                 "sb": np.float32(1 / 64), "zb": np.uint8(128), "sy": np.float32(1 / 32),
                 "zy": np.uint8(128)}
    return make(nodes, [("x", np.uint8, (1, C, T))], [("y", np.uint8, (1, C, T))], constants)


def test_a_qdq_instance_norm_runs_as_one_layernorm_within_one_step():  # type: ignore[no-untyped-def]
    _, model = _qdq_model(np.full(C, 255), np.full(C, 128))
    fused, _ = run_passes(model)
    assert "InstanceNormalization" not in op_types(fused)
    assert op_types(fused).count("QLayerNorm") == 1
    x = {"x": np.random.default_rng(9).integers(0, 256, (1, C, T)).astype(np.uint8)}
    diff = run_model(fused, x)["y"].astype(np.int64) - run_model(model, x)["y"]
    assert 0 < np.count_nonzero(run_model(fused, x)["y"] - 128)
    assert np.abs(diff).max() <= 1  # the quantized variance is coarser than the exact one


def test_a_qdq_instance_norm_of_other_scales_stays():  # type: ignore[no-untyped-def]
    _, model = _qdq_model(np.linspace(100, 255, C), np.linspace(100, 160, C))
    assert instance_norm_to_layernorm(model, PassReport()) is model


def test_a_computed_scale_stays():  # type: ignore[no-untyped-def]
    nodes = [node("Relu", ["s"], ["sr"]),
             node("InstanceNormalization", ["x", "sr", "b"], ["y"], epsilon=1e-5)]
    _, model = make(nodes, [("x", np.float32, (1, C, T)), ("s", np.float32, (C,))],
                    [("y", np.float32, (1, C, T))], {"b": np.zeros(C, np.float32)})
    assert instance_norm_to_layernorm(model, PassReport()) is model
