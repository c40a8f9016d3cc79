import numpy as np
import pytest

from systolic.mapper.passes.quant_params import (
    INFINITE_SCALE,
    NotFusable,
    effective_weights,
    per_tensor_params,
)
from systolic.mapper.passes.quantize_float import quantize_weights


def _difference_in_int64(w, zero_point, axis):
    diff = w.astype(np.int64)
    if zero_point is not None:
        shape = [1] * w.ndim
        if zero_point.size > 1:
            shape[axis] = -1
        diff = diff - zero_point.astype(np.int64).reshape(shape if zero_point.size > 1 else ())
    return diff


@pytest.mark.parametrize(("w_dtype", "zp"), [
    (np.int8, None),
    (np.int8, np.zeros(3, np.int8)),
    (np.int8, np.array([0], np.int8)),
    (np.int8, np.array([1, -2, 0], np.int8)),
    (np.uint8, np.array([128, 120, 130], np.uint8)),
    (np.uint8, np.array(128, np.uint8)),
])
def test_effective_weights_are_the_exact_difference(w_dtype, zp):
    r = np.random.default_rng(90)
    info = np.iinfo(w_dtype)
    w = r.integers(info.min, info.max + 1, (3, 4, 2), dtype=w_dtype)
    if w_dtype == np.int8:
        w = np.clip(w, -120, 120).astype(np.int8)
    else:
        w = np.clip(w, 3, 250).astype(np.uint8)
    got = effective_weights(w, zp, 0)
    expected = _difference_in_int64(w, zp, 0)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, expected)
    assert got is not w


def test_effective_weights_refuse_a_difference_beyond_int8():
    w = np.array([[0, 255]], np.uint8)
    with pytest.raises(NotFusable, match=r"span \[-1, 254\]"):
        effective_weights(w, np.array(1, np.uint8), 0)


def _quantize_weights_in_float64(w, axis):
    """The definition: peak and division in float64 after moving the channel axis first."""
    moved = np.moveaxis(w.astype(np.float64), axis, 0)
    peak = np.abs(moved.reshape(moved.shape[0], -1)).max(axis=1)
    scale = np.where(peak > 0, peak / 127, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w.astype(np.float64) / scale.astype(np.float64).reshape(shape)),
                -127, 127)
    return q.astype(np.int8), scale


@pytest.mark.parametrize(("shape", "axis"), [((6, 3, 3, 3), 0), ((40, 7), 1), ((5, 9), 0)])
def test_quantize_weights_match_the_float64_definition(shape, axis):
    r = np.random.default_rng(91)
    w = (r.standard_normal(shape) * r.uniform(0.01, 3.0)).astype(np.float32)
    w[0] = 0.0  # an all-zero channel along axis 0 (scale 1.0 when axis is 0)
    q, scale = quantize_weights(w, axis)
    q_ref, scale_ref = _quantize_weights_in_float64(w, axis)
    assert q.dtype == np.int8 and scale.dtype == np.float32
    assert q.tobytes() == q_ref.tobytes() and scale.tobytes() == scale_ref.tobytes()


def test_weight_scale_floor_relative_to_the_largest_channel():
    from systolic.mapper.passes.quant_params import RELATIVE_SCALE_FLOOR, weight_scale_floor

    peaks = np.array([127.0, 1e-39, 0.0])
    np.testing.assert_array_equal(weight_scale_floor(peaks, None, None, None),
                                  [RELATIVE_SCALE_FLOOR] * 3)


def test_weight_scale_floor_keeps_multiplier_and_bias_in_range():
    from systolic.mapper.passes.quant_params import (
        BIAS_LIMIT,
        MULTIPLIER_MARGIN,
        weight_scale_floor,
    )

    peaks = np.array([1e-39, 1e-39])
    x_scale, y_scale, bias = 0.02, 0.5, np.array([0.0, 1e4])
    floor = weight_scale_floor(peaks, x_scale, y_scale, bias)
    assert floor[0] == MULTIPLIER_MARGIN * y_scale / x_scale
    assert floor[1] == 1e4 / (x_scale * BIAS_LIMIT)
    # the scales the floor allows give multipliers and biases the output stage holds
    assert np.all(x_scale * floor / y_scale >= 2.0**-32)
    assert np.all(np.abs(bias) / (x_scale * floor) <= 2**31 - 1)


def test_a_multiplier_below_the_output_stage_range_makes_every_result_the_zero_point():
    from systolic.mapper.passes.quant_params import output_multipliers

    mults, shifts = output_multipliers([1e-10, 0.0, 0.25])
    assert (mults[:2], shifts[:2]) == ((0, 0), (0, 0))
    assert mults[2] != 0
    assert max(abs(a) for a in (-(2**31), 2**31 - 1)) * 1e-10 < 0.5  # why 0 is exact
    with pytest.raises(NotFusable):
        output_multipliers([-1e-10])


def test_an_infinite_scale_is_refused_with_its_cause():
    constants = {"s": np.array(np.inf, np.float32), "z": np.array(0, np.uint8)}
    with pytest.raises(NotFusable, match="scale is inf: .*infinite end.*as the file does"):
        per_tensor_params(constants, "s", "z", "input")


@pytest.mark.parametrize("scale", [0.0, -1.0, np.nan])
def test_other_bad_scales_keep_their_plain_reason(scale):
    constants = {"s": np.array(scale, np.float32), "z": np.array(0, np.uint8)}
    with pytest.raises(NotFusable, match="is not positive and finite") as caught:
        per_tensor_params(constants, "s", "z", "input")
    assert INFINITE_SCALE not in str(caught.value)
