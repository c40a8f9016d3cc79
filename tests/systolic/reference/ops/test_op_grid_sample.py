import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import _oracle, check_op, make_op, rng

R = rng(120)
X = R.standard_normal((2, 3, 5, 6)).astype(np.float32)
GRID = R.uniform(-1.3, 1.3, (2, 4, 3, 2)).astype(np.float32)
TOL = {"rtol": 1e-4, "atol": 1e-5}


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_16(mode, padding, align):
    """onnx's ReferenceEvaluator knows only version 20's mode names, so version 16 is
    compared with its result at 20 under the new name."""
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    renamed = attrs | {"mode": {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)}
    expected = _oracle("GridSample", [X, GRID], renamed, 20, 1, "")
    check_op("GridSample", [X, GRID], attrs, opset=16, expected=expected, **TOL)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_20_volumes(mode, padding):
    x = R.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    grid = R.uniform(-1.2, 1.2, (1, 2, 3, 2, 3)).astype(np.float32)
    check_op("GridSample", [x, grid], {"mode": mode, "padding_mode": padding}, opset=20, **TOL)


def test_identity_grid_reproduces_the_input():
    ys, xs = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 6), indexing="ij")
    grid = np.stack([xs, ys], axis=-1)[None].repeat(2, 0).astype(np.float32)
    (out,) = check_op("GridSample", [X, grid], {"align_corners": 1}, opset=16, **TOL)
    np.testing.assert_allclose(out, X, rtol=1e-5, atol=1e-6)


def test_mode_names_follow_the_version():
    with pytest.raises(ModelError, match=r"mode 'linear' must be one of bilinear"):
        make_op("GridSample", {"mode": "linear"}, 16)
    with pytest.raises(ModelError, match=r"must be \(N, C, D1..Dk\) and \(N, H1..Hk, k\) with k = 2"):
        make_op("GridSample", {}, 16).run([X[:, :, :, :, None], GRID])
