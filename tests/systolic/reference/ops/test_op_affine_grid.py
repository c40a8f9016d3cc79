import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

R = rng(121)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 1, 3, 4, 5]])
def test_affine_grid(align, size):
    k = len(size) - 2
    theta = R.standard_normal((2, k, k + 1)).astype(np.float32)
    check_op("AffineGrid", [theta, np.array(size, np.int64)], {"align_corners": align},
             opset=20, rtol=1e-5, atol=1e-6)


def test_identity_theta_feeds_grid_sample_back_the_input():
    x = R.standard_normal((1, 2, 4, 5)).astype(np.float32)
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    (grid,) = make_op("AffineGrid", {}, 20).run([theta, np.array(x.shape, np.int64)])
    (out,) = make_op("GridSample", {}, 20).run([x, grid])
    np.testing.assert_allclose(out, x, rtol=1e-5, atol=1e-6)


def test_theta_that_does_not_fit_the_size():
    with pytest.raises(ModelError, match=r"must be \(N, 2, 3\) with \[N, C, H, W\]"):
        make_op("AffineGrid", {}, 20).run([np.zeros((2, 3, 4), np.float32),
                                          np.array([2, 1, 4, 5], np.int64)])
