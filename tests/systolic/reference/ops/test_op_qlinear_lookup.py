import numpy as np
import pytest

from ..oracle import rng
from ..ort_oracle import check_ort

MS = "com.microsoft"


def every_value(dtype):
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1).astype(dtype).reshape(2, -1)


def scales_and_zero_points(r, dtype, n):
    info = np.iinfo(dtype)
    for _ in range(n):
        yield (np.float32(10 ** r.uniform(-3, 0)), np.array(r.integers(info.min, info.max + 1),
                                                             dtype),
               np.float32(10 ** r.uniform(-3, 0)), np.array(r.integers(info.min, info.max + 1),
                                                            dtype))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("alpha", [0.01, 0.1, 0.5])
def test_leaky_relu_matches_onnxruntime(dtype, alpha):
    r = rng(81)
    for xs, xz, ys, yz in scales_and_zero_points(r, dtype, 10):
        check_ort("QLinearLeakyRelu", [every_value(dtype), xs, xz, ys, yz], {"alpha": alpha},
                  opset=13, domain=MS)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_sigmoid_is_within_one_of_onnxruntime(dtype):
    # onnxruntime's sigmoid is a float32 polynomial approximation (MlasComputeLogistic), ours
    # the exact function rounded to float32: results near a rounding boundary may differ by 1.
    r = rng(82)
    for xs, xz, _, yz in scales_and_zero_points(r, dtype, 20):
        ys = np.float32(1 / 255 * r.uniform(0.5, 2))
        check_ort("QLinearSigmoid", [every_value(dtype), np.float32(xs * 20), xz, ys, yz],
                  opset=13, domain=MS, max_off_by_one=0.01)
