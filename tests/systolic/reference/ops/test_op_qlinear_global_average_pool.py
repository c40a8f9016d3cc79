import numpy as np
import pytest

from ..oracle import rng
from ..ort_oracle import check_ort

MS = "com.microsoft"


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("shape", [(2, 5, 7, 7), (1, 16, 3, 4), (3, 4, 10), (1, 3, 13, 13)])
@pytest.mark.parametrize("scales", [(0.02, 0.01), (1e-4, 3e-4), (10.0, 7.3)])
def test_matches_onnxruntime(dtype, channels_last, shape, scales):
    r = rng(61)
    info = np.iinfo(dtype)
    for x_zp, y_zp in ((info.min, info.max), (0, 0), (r.integers(info.min, info.max), 3)):
        x = r.integers(info.min, info.max + 1, shape).astype(dtype)
        check_ort("QLinearGlobalAveragePool",
                  [x, np.float32(scales[0]), np.array(x_zp, dtype), np.float32(scales[1]),
                   np.array(y_zp, dtype)], {"channels_last": channels_last}, opset=13,
                  domain=MS)
