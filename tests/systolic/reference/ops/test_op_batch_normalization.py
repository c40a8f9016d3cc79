import numpy as np
import pytest

from systolic.errors import UnsupportedError

from ..oracle import check_op, make_op, rng


def _params(shape, seed=26):
    r = rng(seed)
    scale, bias, mean = (r.standard_normal(shape).astype(np.float32) for _ in range(3))
    var = (np.abs(r.standard_normal(shape)) + 0.1).astype(np.float32)
    return [scale, bias, mean, var]


def _formula(x, scale, bias, mean, var, epsilon):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale, bias, mean, var = (p.reshape(shape) for p in (scale, bias, mean, var))
    return ((x - mean) / np.sqrt(var + np.float32(epsilon)) * scale + bias).astype(np.float32)


@pytest.mark.parametrize(
    ("opset", "attrs"),
    [(6, {"is_test": 1}), (7, {}), (9, {}), (14, {}), (15, {"epsilon": 1e-3, "momentum": 0.8})],
)
@pytest.mark.parametrize("x_shape", [(2, 3, 4, 5), (2, 3), (1, 3, 6)])
def test_batch_normalization_matches_oracle(opset, attrs, x_shape):
    x = rng(27).standard_normal(x_shape).astype(np.float32)
    # Before 14 onnx's reference fails (6, 7: returns a tuple) or mixes in batch statistics
    # (9: it treats the momentum default as training), and onnxruntime has no kernel for 6:
    # the spec's inference formula in numpy is the oracle there.
    inputs = [x, *_params((3,))]
    expected = [_formula(*inputs, attrs.get("epsilon", 1e-5))] if opset < 14 else None
    check_op("BatchNormalization", inputs, attrs, opset=opset, expected=expected)


@pytest.mark.parametrize("opset", [1, 6, 7])
def test_batch_normalization_per_activation(opset):
    # spatial=0: parameters have shape [C, *spatial]. The oracle has no such mode: numpy.
    x = rng(28).standard_normal((2, 3, 4)).astype(np.float32)
    scale, bias, mean, var = _params((3, 4))
    attrs = {"spatial": 0, "epsilon": 1e-5}
    if opset == 1:
        attrs["consumed_inputs"] = [0, 0, 0, 1, 1]
    expected = (x - mean) / np.sqrt(var + np.float32(1e-5)) * scale + bias
    check_op("BatchNormalization", [x, scale, bias, mean, var], attrs, opset=opset,
             expected=[expected.astype(np.float32)])


def test_training_mode_is_unsupported():
    with pytest.raises(UnsupportedError, match=r"training_mode=1 is not supported"):
        make_op("BatchNormalization", {"training_mode": 1}, 15)
