import numpy as np
import pytest

from ..oracle import rng
from ..ort_oracle import check_ort

MS = "com.microsoft"


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_matches_onnxruntime(dtype, axis):
    r = rng(71)
    info = np.iinfo(dtype)
    y_scale, y_zp = np.float32(0.05), np.array(7, dtype)
    shapes = {1: [(2, 3, 4), (2, 5, 4), (2, 1, 4)], -1: [(2, 3, 4), (2, 3, 2), (2, 3, 6)],
              0: [(1, 3, 4), (3, 3, 4), (2, 3, 4)]}[axis]
    params = [(y_scale, y_zp), (np.float32(0.013), np.array(info.min, dtype)),
              (np.float32(7.5), np.array(info.max, dtype))]
    inputs = [y_scale, y_zp]
    for shape, (scale, zp) in zip(shapes, params, strict=True):
        inputs += [r.integers(info.min, info.max + 1, shape).astype(dtype), scale, zp]
    check_ort("QLinearConcat", inputs, {"axis": axis}, opset=13, domain=MS)


def test_every_value_requantizes_like_onnxruntime():
    values = np.arange(256, dtype=np.uint8).reshape(1, 256)
    r = rng(72)
    for _ in range(20):
        scale, y_scale = (np.float32(10 ** r.uniform(-3, 1)) for _ in range(2))
        zp, y_zp = (np.uint8(r.integers(0, 256)) for _ in range(2))
        check_ort("QLinearConcat", [y_scale, y_zp, values, scale, zp, values, y_scale, y_zp],
                  {"axis": 0}, opset=13, domain=MS)
