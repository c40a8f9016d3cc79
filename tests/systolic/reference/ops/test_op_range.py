import numpy as np
import pytest

from systolic.errors import ModelError, UnsupportedError

from ..oracle import check_op, run_ours


@pytest.mark.parametrize(("start", "limit", "delta"), [(0, 10, 3), (10, -2, -4), (5, 5, 1),
                                                        (1, 0, 1)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_range_matches_oracle(start, limit, delta, dtype):
    inputs = [np.array(v, dtype) for v in (start, limit, delta)]
    check_op("Range", inputs, opset=11, known=[0, 1, 2])


def test_range_float_steps():
    inputs = [np.array(v, np.float32) for v in (0.5, 2.0, 0.25)]
    check_op("Range", inputs, opset=11, known=[0, 1, 2])


def test_range_needs_known_inputs():
    inputs = [np.array(v, np.float32) for v in (0.0, 2.0, 1.0)]
    with pytest.raises(UnsupportedError, match=r"computed at run time; .* make them constants"):
        run_ours("Range", inputs, {}, 11, known=[])


def test_range_refuses_zero_delta():
    inputs = [np.array(v, np.int64) for v in (0, 2, 0)]
    with pytest.raises(ModelError, match=r"delta must not be 0$"):
        run_ours("Range", inputs, {}, 11)
