import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

X = rng(116).standard_normal((1, 2, 6, 7)).astype(np.float32)


@pytest.mark.parametrize("opset", [2, 11, 18, 22])
@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize(("kernel", "strides", "pads"), [
    ([2, 2], None, None), ([3, 2], [2, 1], None), ([3, 3], [2, 2], [1, 0, 1, 1])])
def test_lp_pool(opset, p, kernel, strides, pads):
    attrs = {"kernel_shape": kernel, "p": p}
    attrs |= {"strides": strides} if strides else {}
    attrs |= {"pads": pads} if pads else {}
    check_op("LpPool", [X], attrs, opset=opset, rtol=1e-5, atol=1e-5)


def test_lp_pool_18_dilations():
    check_op("LpPool", [X], {"kernel_shape": [2, 2], "dilations": [2, 1], "strides": [2, 2]},
             opset=18, rtol=1e-5, atol=1e-5)


def test_lp_pool_18_ceil_mode_sums_only_the_cells_inside():
    """A ceil-mode window that hangs over the end sums the cells inside it. onnx's
    ReferenceEvaluator scales an average by the full kernel size there (too large), so the
    expected values are summed here."""
    x = X[:, :, :5, :5]
    want = np.zeros((1, 2, 3, 3), np.float64)
    for i in range(3):
        for j in range(3):
            cells = x[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].astype(np.float64)
            want[:, :, i, j] = np.sqrt((cells**2).sum(axis=(2, 3)))
    check_op("LpPool", [x], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
             opset=18, rtol=1e-5, atol=1e-6, expected=[want.astype(np.float32)])


def test_lp_pool_1_takes_a_float_p():
    (out,) = make_op("LpPool", {"kernel_shape": [2, 2], "p": 2.0}, 1).run([X])
    (want,) = make_op("LpPool", {"kernel_shape": [2, 2], "p": 2}, 2).run([X])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("opset", [2, 22])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(opset, p):
    """onnx's ReferenceEvaluator has no GlobalLpPool: the norm is written out."""
    want = (np.abs(X.astype(np.float64)) ** p).sum(axis=(2, 3), keepdims=True) ** (1 / p)
    check_op("GlobalLpPool", [X], {"p": p}, opset=opset, rtol=1e-6, atol=1e-6,
             expected=[want.astype(np.float32)])


def test_bad_p():
    with pytest.raises(ModelError, match=r"'p' must be positive, got 0"):
        make_op("GlobalLpPool", {"p": 0}, 2)
    with pytest.raises(ModelError, match=r"'p' must be an integer from version 2"):
        make_op("LpPool", {"kernel_shape": [2, 2], "p": 1.5}, 11)
    with pytest.raises(ModelError, match=r"'dilations' needs LpPool-18"):
        make_op("LpPool", {"kernel_shape": [2, 2], "dilations": [1, 1]}, 11)
