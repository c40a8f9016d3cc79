import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import _oracle, check_op, make_op, rng

R = rng(114)
X = R.standard_normal((2, 3, 10, 12)).astype(np.float32)
ROIS = np.array([[0.0, 0.0, 9.0, 9.0], [2.3, 1.1, 7.9, 6.2], [5.0, 5.0, 5.4, 5.2],
                 [-3.0, -2.0, 14.0, 13.0], [8.0, 1.0, 11.5, 9.5]], np.float32)
BATCH = np.array([0, 1, 1, 0, 1], np.int64)


@pytest.mark.parametrize("opset", [10, 16, 22])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize(("out_h", "out_w", "ratio"), [(1, 1, 0), (3, 2, 0), (4, 4, 2)])
def test_roi_align(opset, mode, out_h, out_w, ratio):
    """Version 10 behaves as 16's "output_half_pixel"; onnx's ReferenceEvaluator applies
    16's default "half_pixel" to it, so version 10 is compared with the oracle at 16."""
    attrs = {"mode": mode, "output_height": out_h, "output_width": out_w,
             "sampling_ratio": ratio, "spatial_scale": 0.8}
    expected = None
    if opset == 10:
        legacy = attrs | {"coordinate_transformation_mode": "output_half_pixel"}
        expected = _oracle("RoiAlign", [X, ROIS, BATCH], legacy, 16, 1, "")
    check_op("RoiAlign", [X, ROIS, BATCH], attrs, opset=opset, rtol=1e-4, atol=1e-5,
             expected=expected)


@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
def test_coordinate_transformation_modes(ctm):
    check_op("RoiAlign", [X, ROIS, BATCH], {"coordinate_transformation_mode": ctm,
                                            "output_height": 2, "output_width": 3},
             opset=16, rtol=1e-4, atol=1e-5)


def test_bad_batch_index_and_shapes():
    op = make_op("RoiAlign", {}, 16)
    with pytest.raises(ModelError, match=r"batch_indices \[0, 2\] must be below N=2"):
        op.run([X, ROIS[:2], np.array([0, 2], np.int64)])
    with pytest.raises(ModelError, match=r"must be \(N, C, H, W\), \(R, 4\) and \(R,\)"):
        op.run([X, ROIS[:, :3], BATCH])


def test_bad_mode():
    with pytest.raises(ModelError, match=r"mode 'sum' must be 'avg' or 'max'"):
        make_op("RoiAlign", {"mode": "sum"}, 16)
