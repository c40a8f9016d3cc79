import numpy as np
import pytest

from ..oracle import check_op, rng
from ..ort_oracle import run_ort


@pytest.mark.parametrize("opset", [6, 22])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 3, 3)])
def test_instance_normalization_matches_oracle(opset, shape):
    r = rng(76)
    x = (r.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    scale, bias = (r.standard_normal(shape[1]).astype(np.float32) for _ in range(2))
    check_op("InstanceNormalization", [x, scale, bias], {"epsilon": 1e-4}, opset=opset,
             atol=1e-5)


def test_instance_normalization_matches_onnxruntime():
    r = rng(77)
    x = r.standard_normal((2, 3, 4, 4)).astype(np.float32)
    scale, bias = (r.standard_normal(3).astype(np.float32) for _ in range(2))
    expected = run_ort("InstanceNormalization", [x, scale, bias], opset=6)
    check_op("InstanceNormalization", [x, scale, bias], opset=6, expected=expected, atol=1e-5)
