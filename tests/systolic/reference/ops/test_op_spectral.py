import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

R = rng(119)
REAL = R.standard_normal((2, 16, 1)).astype(np.float32)
COMPLEX = R.standard_normal((2, 16, 2)).astype(np.float32)
TOL = {"rtol": 1e-4, "atol": 1e-5}


@pytest.mark.parametrize("x", [REAL, COMPLEX], ids=["real", "complex"])
@pytest.mark.parametrize("inverse", [0, 1])
@pytest.mark.parametrize("length", [None, 12, 20])
def test_dft_17(x, inverse, length):
    inputs = [x] if length is None else [x, np.array(length, np.int64)]
    check_op("DFT", inputs, {"inverse": inverse}, opset=17, **TOL)


@pytest.mark.parametrize("axis", [None, 1, -2])
def test_dft_20_axis_input_and_onesided(axis):
    x = R.standard_normal((2, 10, 3, 1)).astype(np.float32)
    inputs = [x, np.array(10, np.int64)] + ([] if axis is None else [np.array(axis, np.int64)])
    check_op("DFT", inputs, {"onesided": 1}, opset=20, **TOL)


@pytest.mark.parametrize("length", [None, 14])
def test_inverse_onesided_dft_is_irfft(length):
    (half,) = make_op("DFT", {"onesided": 1}, 20).run([REAL])
    inputs = [half] if length is None else [half, np.array(length, np.int64)]
    (back,) = check_op("DFT", inputs, {"inverse": 1, "onesided": 1}, opset=20, **TOL)
    if length is None:
        np.testing.assert_allclose(back, REAL, rtol=1e-5, atol=1e-5)


def test_dft_refuses_the_complex_axis():
    with pytest.raises(ModelError, match=r"axis 2 must be in \[-3, -2\] or \[0, 1\]"):
        make_op("DFT", {"axis": 2}, 17).run([REAL])


@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize(("step", "window", "length"), [
    (4, np.hanning(8).astype(np.float32), None),
    (3, None, 5),
    (2, np.ones(6, np.float32), 6),
])
def test_stft_real(onesided, step, window, length):
    inputs = [REAL, np.array(step, np.int64), window,
              None if length is None else np.array(length, np.int64)]
    while inputs[-1] is None:
        inputs.pop()
    check_op("STFT", inputs, {"onesided": onesided}, opset=17, **TOL)


def test_stft_complex_two_sided():
    check_op("STFT", [COMPLEX, np.array(4, np.int64), np.hanning(8).astype(np.float32)],
             {"onesided": 0}, opset=17, **TOL)


def test_stft_frame_longer_than_the_signal():
    with pytest.raises(ModelError, match=r"frame_length 20 between 1 and the signal's length 16"):
        make_op("STFT", {}, 17).run([REAL, np.array(4, np.int64), None,
                                     np.array(20, np.int64)])
