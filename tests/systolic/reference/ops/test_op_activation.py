import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng
from ..ort_oracle import run_ort


@pytest.mark.parametrize(
    ("op_type", "opset", "attrs"),
    [
        ("LeakyRelu", 6, {}),
        ("LeakyRelu", 16, {"alpha": 0.2}),
        ("HardSigmoid", 6, {}),
        ("HardSigmoid", 22, {"alpha": 0.3, "beta": 0.4}),
        ("HardSwish", 14, {}),
        ("HardSwish", 22, {}),
    ],
)
def test_activation_matches_oracle(op_type, opset, attrs):
    x = (rng(23).standard_normal((2, 3, 8)) * 5).astype(np.float32)
    check_op(op_type, [x], attrs, opset=opset)


@pytest.mark.parametrize(
    ("op_type", "opset", "attrs"),
    [
        ("Elu", 6, {}),
        ("Elu", 22, {"alpha": 0.5}),
        ("Selu", 6, {}),
        ("Selu", 22, {"alpha": 1.5, "gamma": 2.0}),
        ("Softplus", 1, {}),
        ("Softplus", 22, {}),
        ("Mish", 18, {}),
        ("Mish", 22, {}),
        ("Gelu", 20, {}),
        ("Gelu", 20, {"approximate": "tanh"}),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transcendental_activation_matches_oracle(op_type, opset, attrs, dtype):
    x = (rng(24).standard_normal((2, 3, 8)) * 4).astype(dtype)
    x.flat[:4] = [-30.0, 30.0, 0.0, -1e-3]  # saturation and the neighbourhood of zero
    check_op(op_type, [x], attrs, opset=opset)


@pytest.mark.parametrize("op_type", ["Gelu", "Mish", "Softplus", "Elu"])
def test_activation_matches_onnxruntime(op_type):
    x = (rng(25).standard_normal((4, 16)) * 4).astype(np.float32)
    opset = {"Gelu": 20, "Mish": 18}.get(op_type, 13)
    check_op(op_type, [x], opset=opset, expected=run_ort(op_type, [x], opset=opset))


def test_gelu_refuses_an_unknown_approximation():
    with pytest.raises(ModelError, match=r"approximate 'erf' is not supported; use 'none' or"):
        make_op("Gelu", {"approximate": "erf"}, 20)
