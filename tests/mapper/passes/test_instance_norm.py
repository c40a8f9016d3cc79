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
