import numpy as np
import pytest

from systolic.errors import ModelError

from .systolic_oracle import add, run


@pytest.mark.parametrize(("a_type", "b_type", "y_type"), [
    (np.uint8, np.uint8, np.uint8), (np.int8, np.int8, np.int8), (np.uint8, np.int8, np.uint8)])
@pytest.mark.parametrize("shift", [-1, 0, 3, 9])
@pytest.mark.parametrize("negative", [False, True])
def test_matches_exact_sum_rounded_once(a_type, b_type, y_type, shift, negative):
    r = np.random.default_rng(5)
    ai, bi, yi = np.iinfo(a_type), np.iinfo(b_type), np.iinfo(y_type)
    a = r.integers(ai.min, ai.max + 1, (2, 3, 4, 5)).astype(a_type)
    b = r.integers(bi.min, bi.max + 1, (2, 3, 4, 5)).astype(b_type)
    mb = int(r.integers(2**27, 2**31))
    attrs = {"a_zero_point": int(r.integers(ai.min, ai.max + 1)),
             "b_zero_point": int(r.integers(bi.min, bi.max + 1)),
             "multiplier_a": int(r.integers(2**30, 2**31)), "multiplier_b": -mb if negative else mb,
             "shift": shift, "y_zero_point": int(r.integers(yi.min, yi.max + 1)),
             "y_type": 2 if y_type == np.uint8 else 3, "y_lo": int(yi.min) + 2,
             "y_hi": int(yi.max) - 2}
    got = run("QAdd", attrs, a, b)
    want = add(a, b, a_zp=attrs["a_zero_point"], b_zp=attrs["b_zero_point"],
               ma=attrs["multiplier_a"], mb=attrs["multiplier_b"], shift=shift,
               y_zp=attrs["y_zero_point"], lo=attrs["y_lo"], hi=attrs["y_hi"], dtype=y_type)
    assert got.dtype == y_type
    np.testing.assert_array_equal(got, want)


def test_hand_computed_sum():
    # (a - 10) * 2**30 + (b - 20) * 2**29 over 2**31: (a - 10) / 2 + (b - 20) / 4
    a = np.array([13, 11, 10], np.uint8)
    b = np.array([22, 20, 26], np.uint8)
    attrs = {"a_zero_point": 10, "b_zero_point": 20, "multiplier_a": 2**30,
             "multiplier_b": 2**29, "shift": 0, "y_zero_point": 100, "y_type": 2}
    # 1.5 + 0.5 = 2; 0.5 + 0 = 0.5 -> 0; 0 + 1.5 = 1.5 -> 2
    np.testing.assert_array_equal(run("QAdd", attrs, a, b), np.array([102, 100, 102], np.uint8))


def test_rejects_different_shapes():
    attrs = {"multiplier_a": 1, "multiplier_b": 1, "shift": 0, "y_type": 3}
    with pytest.raises(ModelError, match=r"must have the same shape"):
        run("QAdd", attrs, np.zeros((2, 3), np.int8), np.zeros((2,), np.int8))


def test_b_along_the_last_axis_is_broadcast():
    attrs = {"multiplier_a": 2**30, "multiplier_b": 2**30, "shift": 0, "y_type": 3}
    a = np.arange(-12, 12, dtype=np.int8).reshape(2, 3, 4)
    b = np.array([[[4, -8, 12, 100]]], np.int8)
    y = run("QAdd", attrs, a, b)
    expected = np.round((a.astype(np.int64) + b) / 2)  # round half to even, like rhe
    np.testing.assert_array_equal(y, expected.astype(np.int8))


@pytest.mark.parametrize("b_shape", [(1, 3, 1, 1), (2, 3, 1, 1)])
def test_b_per_channel_is_broadcast(b_shape):
    """A batch norm's shift: B [N or 1, C, 1, 1] added to every pixel of its channel."""
    attrs = {"a_zero_point": 3, "b_zero_point": -2, "multiplier_a": 2**30,
             "multiplier_b": 2**29, "shift": 0, "y_type": 3, "y_lo": -100}
    a = np.arange(-60, 60, 2, dtype=np.int8).reshape(2, 3, 2, 5)
    b = np.arange(-9, -9 + 5 * int(np.prod(b_shape)), 5, dtype=np.int8).reshape(b_shape)
    y = run("QAdd", attrs, a, b)
    exact = (a.astype(np.int64) - 3) / 2 + (b.astype(np.int64) + 2) / 4
    expected = np.clip(np.round(exact), -100, 127)  # round half to even, like rhe
    np.testing.assert_array_equal(y, expected.astype(np.int8))


def test_rejects_b_per_channel_with_a_spatial_extent():
    attrs = {"multiplier_a": 1, "multiplier_b": 1, "shift": 0, "y_type": 3}
    with pytest.raises(ModelError, match=r"per channel"):
        run("QAdd", attrs, np.zeros((1, 3, 2, 2), np.int8), np.zeros((1, 3, 2, 1), np.int8))


def test_rejects_missing_shift():
    with pytest.raises(ModelError, match=r"required attribute 'shift' is missing"):
        run("QAdd", {"multiplier_a": 1, "multiplier_b": 1, "y_type": 3},
            np.zeros(2, np.int8), np.zeros(2, np.int8))
