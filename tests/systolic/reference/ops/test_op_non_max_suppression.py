import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning

from ..oracle import check_op, make_op, rng

R = rng(115)
CORNERS = np.array([[[0.0, 0.0, 1.0, 1.0], [0.0, 0.1, 1.0, 1.1], [0.0, -0.1, 1.0, 0.9],
                     [0.0, 10.0, 1.0, 11.0], [1.0, 10.1, 0.0, 11.1], [0.0, 100.0, 1.0, 101.0]]],
                   np.float32)
CENTERS = np.array([[[0.5, 0.5, 1.0, 1.0], [0.5, 0.6, 1.0, 1.0], [0.5, 0.4, 1.0, 1.0],
                     [0.5, 10.5, 1.0, 1.0], [0.5, 10.6, 1.0, 1.0], [0.5, 100.5, 1.0, 1.0]]],
                   np.float32)
SCORES = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], np.float32)


def _inputs(boxes, scores, limit=3, iou=0.5, floor=None):
    extra = [np.array([limit], np.int64), np.array([iou], np.float32)]
    if floor is not None:
        extra.append(np.array([floor], np.float32))
    return [boxes, scores, *extra]


@pytest.mark.parametrize("opset", [10, 11])
@pytest.mark.parametrize(("center", "boxes"), [(0, CORNERS), (1, CENTERS)])
@pytest.mark.parametrize(("limit", "iou", "floor"), [(3, 0.5, None), (2, 0.5, None),
                                                     (10, 0.0, None), (3, 0.5, 0.4)])
def test_nms(opset, center, boxes, limit, iou, floor):
    check_op("NonMaxSuppression", _inputs(boxes, SCORES, limit, iou, floor),
             {"center_point_box": center}, opset=opset, known=[0, 1, 2, 3, 4])


def test_nms_random_batches_and_classes():
    boxes = R.uniform(0, 10, (2, 12, 4)).astype(np.float32)
    scores = R.uniform(0, 1, (2, 3, 12)).astype(np.float32)
    check_op("NonMaxSuppression", _inputs(boxes, scores, 4, 0.3, 0.2), opset=11,
             known=[0, 1, 2, 3, 4])


def test_equal_scores_keep_the_lower_index_first():
    scores = np.array([[[0.5, 0.5, 0.5, 0.5, 0.5, 0.5]]], np.float32)
    (out,) = check_op("NonMaxSuppression", _inputs(CORNERS, scores, 6, 0.5), opset=11,
                      known=[0, 1, 2, 3])
    assert out[:, 2].tolist() == [0, 3, 5]


def test_without_a_limit_nothing_is_kept():
    (out,) = make_op("NonMaxSuppression", {}, 11).run([CORNERS, SCORES])
    assert out.shape == (0, 3)


def test_run_time_boxes_are_unsupported():
    with pytest.raises(ShapeKnownWhenRunning, match=r"output size depends on the boxes'"):
        make_op("NonMaxSuppression", {}, 11).infer(
            [TensorInfo(DataType.FLOAT, (1, 6, 4)), TensorInfo(DataType.FLOAT, (1, 1, 6))])


def test_bad_shapes_and_attribute():
    with pytest.raises(ModelError, match=r"must be \(B, N, 4\) and \(B, C, N\)"):
        make_op("NonMaxSuppression", {}, 11).run([CORNERS, SCORES[:, :, :5]])
    with pytest.raises(ModelError, match=r"center_point_box must be 0 or 1, got 2"):
        make_op("NonMaxSuppression", {"center_point_box": 2}, 11)


def test_boxes_must_be_float32():
    with pytest.raises(ModelError, match=r"boxes has element type f64; expected one of f32"):
        make_op("NonMaxSuppression", {}, 11).infer(
            [TensorInfo(DataType.DOUBLE, (1, 6, 4)), TensorInfo(DataType.DOUBLE, (1, 1, 6))])
