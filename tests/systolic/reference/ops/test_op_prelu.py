import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, rng, run_ours

X = (rng(66).standard_normal((2, 3, 4, 4)) * 3).astype(np.float32)


@pytest.mark.parametrize("opset", [7, 9, 16])
@pytest.mark.parametrize("slope_shape", [(1,), (3, 1, 1), (4,), (2, 3, 4, 4)])
def test_prelu_matches_oracle(opset, slope_shape):
    slope = rng(67).random(slope_shape).astype(np.float32)
    check_op("PRelu", [X, slope], opset=opset)


def test_prelu_6_takes_one_slope_one_per_channel_or_the_full_shape():
    slope = np.array([0.25], np.float32)
    check_op("PRelu", [X, slope], opset=6, expected=[np.where(X >= 0, X, X * 0.25)])
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    check_op("PRelu", [X, slope], opset=6,
             expected=[np.where(X >= 0, X, X * slope.reshape(1, 3, 1, 1))])
    with pytest.raises(ModelError, match=r"must have X's shape .* one per channel before opset"):
        run_ours("PRelu", [X, np.ones((3, 1, 1), np.float32)], {}, 6)


def test_prelu_int32():
    x = np.array([-4, -1, 0, 5], np.int32)
    check_op("PRelu", [x, np.array([2], np.int32)], opset=16, known=[])
