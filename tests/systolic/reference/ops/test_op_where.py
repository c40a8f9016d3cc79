import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, rng, run_ours


@pytest.mark.parametrize("opset", [9, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_where_matches_oracle(opset, dtype):
    r = rng(65)
    cond = r.random((3, 1, 4)) < 0.5
    x = r.integers(0, 100, (2, 4)).astype(dtype)
    y = r.integers(0, 100, (3, 2, 1)).astype(dtype)
    check_op("Where", [cond, x, y], opset=opset, known=[])


def test_where_refuses_mixed_types():
    cond = np.array([True])
    with pytest.raises(ModelError, match=r"X is f32 but Y is i64; they must match$"):
        run_ours("Where", [cond, np.zeros(1, np.float32), np.zeros(1, np.int64)], {}, 16)
