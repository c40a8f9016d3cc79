import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

X = (rng(25).standard_normal((3, 5)) * 3).astype(np.float32)


@pytest.mark.parametrize("opset", [6])
@pytest.mark.parametrize("attrs", [{}, {"min": -1.0}, {"max": 0.5}, {"min": -1.0, "max": 2.0}])
def test_clip_attributes(opset, attrs):
    check_op("Clip", [X], attrs, opset=opset)


def test_clip_1_without_bounds_is_identity():
    check_op("Clip", [X], {}, opset=1, expected=[X])


@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize(("low", "high"), [(None, None), (-1.0, None), (None, 1.0), (-0.5, 2.0)])
def test_clip_inputs(opset, low, high):
    def scalar(v):
        return None if v is None else np.array(v, np.float32)

    inputs = [X, scalar(low), scalar(high)]
    while inputs[-1] is None:
        inputs.pop()
    check_op("Clip", inputs, opset=opset)


def test_clip_int8():
    x = np.array([-128, -5, 0, 7, 127], np.int8)
    check_op("Clip", [x, np.array(-4, np.int8), np.array(6, np.int8)], opset=13, known=[])


def test_clip_rejects_attributes_from_11():
    with pytest.raises(ModelError, match=r"from Clip-11 the bounds are inputs"):
        make_op("Clip", {"min": 0.0}, 11)
