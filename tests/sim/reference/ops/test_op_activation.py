import numpy as np
import pytest

from ..oracle import check_op, rng


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
