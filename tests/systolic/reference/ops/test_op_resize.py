import numpy as np
import pytest

from systolic.errors import ModelError, UnsupportedError

from ..oracle import check_op, make_op, rng, run_ours
from ..ort_oracle import run_ort

X = rng(90).standard_normal((1, 2, 4, 5)).astype(np.float32)
EMPTY = np.zeros(0, np.float32)
COORDS = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]
SCALES = [np.array(s, np.float32) for s in ([1, 1, 2, 2], [1, 1, 0.5, 0.6], [1, 1, 1.5, 3],
                                            [1, 1, 0.75, 1.0])]
SIZES = [np.array(s, np.int64) for s in ([1, 2, 8, 9], [1, 2, 3, 2], [1, 2, 1, 7])]


def both_oracles(inputs, attrs, opset, *, reference=True):
    """onnxruntime always (roi, scales and sizes as initializers, as exporters write them);
    onnx's reference evaluator as well unless it lacks the case."""
    known = [i for i in range(1, len(inputs))]
    expected = run_ort("Resize", inputs, attrs, opset=opset, constant=known)
    check_op("Resize", inputs, attrs, opset=opset, known=known, expected=expected, atol=1e-5)
    if reference:
        check_op("Resize", inputs, attrs, opset=opset, known=known, atol=1e-5)


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("opset", [11, 13, 18])
def test_resize_nearest_scales(coord, nearest, opset):
    attrs = {"mode": "nearest", "coordinate_transformation_mode": coord, "nearest_mode": nearest}
    for scales in SCALES:
        # onnx 1.23's evaluator picks the wrong neighbour for floor/ceil when a coordinate is
        # a whole number (onnxruntime agrees with the spec and with us)
        both_oracles([X, EMPTY, scales], attrs, opset, reference=nearest not in ("floor", "ceil"))


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil"])
def test_resize_nearest_sizes(coord, nearest):
    attrs = {"mode": "nearest", "coordinate_transformation_mode": coord, "nearest_mode": nearest}
    for sizes in SIZES:
        both_oracles([X, EMPTY, EMPTY, sizes], attrs, 13)


@pytest.mark.parametrize("coord", [*COORDS, "half_pixel_symmetric"])
@pytest.mark.parametrize("opset", [11, 13, 19])
def test_resize_linear(coord, opset):
    if coord == "half_pixel_symmetric" and opset < 19:
        pytest.skip("half_pixel_symmetric exists from Resize-19")
    attrs = {"mode": "linear", "coordinate_transformation_mode": coord}
    for scales in SCALES:
        both_oracles([X, EMPTY, scales], attrs, opset)
    for sizes in SIZES:
        both_oracles([X, EMPTY, EMPTY, sizes], attrs, opset)


def test_resize_tf_half_pixel_for_nn():
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"}
    for scales in SCALES:  # not in onnx's evaluator
        both_oracles([X, EMPTY, scales], attrs, 11, reference=False)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_tf_crop_and_resize(mode):
    roi = np.array([0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2], np.float32)
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": -3.0}
    both_oracles([X, roi, EMPTY, np.array([1, 2, 5, 6], np.int64)], attrs, 13)
    # onnx's evaluator divides by size * scale - 1 (7.5 - 1 here), not by the integer output
    # size - 1 as onnxruntime and the spec's length_resized do
    both_oracles([X, roi, np.array([1, 1, 2, 1.5], np.float32)], attrs, 13, reference=False)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_10(mode):
    for scales in SCALES:
        inputs = [X, scales]
        check_op("Resize", inputs, {"mode": mode}, opset=10, known=[1], atol=1e-5,
                 expected=run_ort("Resize", inputs, {"mode": mode}, opset=10))


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_resize_18_axes_and_aspect_ratio(policy):
    attrs = {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": policy}
    both_oracles([X, EMPTY, EMPTY, np.array([7, 7], np.int64)], attrs, 18)
    scales = np.array([2.5], np.float32)
    both_oracles([X, EMPTY, scales], {"mode": "nearest", "axes": [3]}, 18)
    # onnx 1.23's evaluator cannot take a negative axis
    both_oracles([X, EMPTY, scales], {"mode": "nearest", "axes": [-1]}, 18, reference=False)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32])
def test_resize_nearest_integers(dtype):
    x = rng(91).integers(-100, 100, (1, 3, 3, 4)).astype(dtype)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
             "nearest_mode": "floor"}
    inputs = [x, EMPTY, np.array([1, 1, 2, 2], np.float32)]
    check_op("Resize", inputs, attrs, opset=13, known=[1, 2],
             expected=run_ort("Resize", inputs, attrs, opset=13))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 3.0, 1.5],
                                    [1.0, 2.0, 1.0, 1.0]])
def test_upsample(mode, scales):
    inputs = [X, np.array(scales, np.float32)]
    expected = run_ort("Upsample", [X], {"mode": mode, "scales": scales}, opset=7)
    check_op("Upsample", [X], {"mode": mode, "scales": scales}, opset=7, expected=expected,
             atol=1e-5)
    check_op("Upsample", inputs, {"mode": mode}, opset=9, known=[1], expected=expected,
             atol=1e-5)


def test_upsample_refuses_to_shrink():
    with pytest.raises(ModelError, match=r"scales must be at least 1 .* use Resize to shrink"):
        run_ours("Upsample", [X], {"scales": [1.0, 1.0, 0.5, 1.0]}, 7)


def test_upsample_refuses_cubic():
    """Upsample has no cubic mode (Resize's cubic: test_op_resize_cubic)."""
    with pytest.raises(ModelError, match=r"mode 'cubic' is not one of nearest, linear$"):
        make_op("Upsample", {"mode": "cubic"}, 9)


def test_resize_refuses_an_unknown_coordinate_mode():
    with pytest.raises(ModelError, match=r"coordinate_transformation_mode 'half_pixel_symmetric' "
                                         r"is not one of"):
        make_op("Resize", {"coordinate_transformation_mode": "half_pixel_symmetric"}, 18)


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_resize_linear_integers_truncate_as_onnxruntime(coord, dtype):
    """A QOperator export's integer Resize: the float result truncated toward zero; equal to
    onnxruntime for dyadic weights, within 1 where its float32 sum rounds below a whole
    number."""
    info = np.iinfo(dtype)
    x = rng(91).integers(info.min, info.max + 1, (1, 2, 5, 7)).astype(dtype)
    for scales, most in (([1, 1, 2, 2], 0 if coord != "align_corners" else 1),
                         ([1, 1, 1.5, 2.5], 1), ([1, 1, 0.5, 0.6], 1)):
        inputs = [x, EMPTY, np.array(scales, np.float32)]
        attrs = {"mode": "linear", "coordinate_transformation_mode": coord}
        ours = run_ours("Resize", inputs, attrs, 13, known=[1, 2])[0][0]
        theirs = run_ort("Resize", inputs, attrs, opset=13, constant=[1, 2])[0]
        assert ours.dtype == dtype
        assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= most


def test_resize_refuses_antialiased_shrinking():
    with pytest.raises(UnsupportedError, match=r"antialias=1 when shrinking .* set antialias=0"):
        run_ours("Resize", [X, EMPTY, np.array([1, 1, 0.5, 0.5], np.float32)],
                 {"mode": "linear", "antialias": 1}, 18, known=[1, 2])


def test_resize_needs_constant_scales():
    with pytest.raises(UnsupportedError, match=r"input 2 \(roi, scales or sizes\) is computed at "
                                               r"run time"):
        run_ours("Resize", [X, EMPTY, np.array([1, 1, 2, 2], np.float32)], {}, 13, known=[1])


def test_resize_refuses_both_scales_and_sizes():
    with pytest.raises(ModelError, match=r"exactly one of scales and sizes must be given"):
        run_ours("Resize", [X, EMPTY, np.array([1, 1, 2, 2], np.float32),
                            np.array([1, 2, 8, 10], np.int64)], {}, 13, known=[1, 2, 3])


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_upsample_1_height_and_width_scales(mode):
    attrs = {"mode": mode, "height_scale": 2.0, "width_scale": 3.0}
    expected = run_ort("Upsample", [X], {"mode": "nearest" if mode == "nearest" else "linear",
                                         "scales": [1.0, 1.0, 2.0, 3.0]}, opset=7)
    check_op("Upsample", [X], attrs, opset=1, expected=expected, atol=1e-5)


def test_upsample_10_reads_scales_input():
    inputs = [X, np.array([1, 1, 2, 2], np.float32)]
    expected = run_ort("Upsample", [X], {"scales": [1.0, 1.0, 2.0, 2.0]}, opset=7)
    check_op("Upsample", inputs, opset=10, known=[1], expected=expected)
