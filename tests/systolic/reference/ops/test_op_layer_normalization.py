import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng
from ..ort_oracle import run_ort

X = (rng(73).standard_normal((2, 3, 8)) * 3 + 1).astype(np.float32)


@pytest.mark.parametrize(("axis", "scale_shape"), [(-1, (8,)), (1, (3, 8)), (1, (1, 8)),
                                                   (0, (2, 3, 8))])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_normalization_matches_oracle(axis, scale_shape, with_bias):
    r = rng(74)
    scale = r.standard_normal(scale_shape).astype(np.float32)
    inputs = [X, scale] + ([r.standard_normal(scale_shape).astype(np.float32)]
                           if with_bias else [])
    check_op("LayerNormalization", inputs, {"axis": axis, "epsilon": 1e-3}, opset=17,
             n_outputs=3, rtol=1e-5, atol=1e-5)


def test_layer_normalization_matches_onnxruntime():
    r = rng(75)
    scale, bias = r.standard_normal((8,)).astype(np.float32), r.standard_normal((8,)).astype(
        np.float32)
    (expected,) = run_ort("LayerNormalization", [X, scale, bias], opset=17)
    check_op("LayerNormalization", [X, scale, bias], opset=17, expected=[expected],
             rtol=1e-5, atol=1e-5)


def test_layer_normalization_refuses_an_integer_stash_type():
    with pytest.raises(ModelError, match=r"stash_type 7 is not a float type; use 1 \(float\)$"):
        make_op("LayerNormalization", {"stash_type": 7}, 17)
