import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng


@pytest.mark.parametrize("opset", [4, 11, 13])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat(opset, axis):
    r = rng(44)
    shapes = [(2, 3, 4), (2, 3, 4)]
    inputs = []
    for i, s in enumerate(shapes):
        s = list(s)
        s[axis] += i
        inputs.append(r.standard_normal(s).astype(np.float32))
    check_op("Concat", inputs, {"axis": axis}, opset=opset)


@pytest.mark.parametrize("opset", [11, 13])
def test_concat_negative_axis_and_int64(opset):
    inputs = [np.array([1, 2], np.int64), np.array([3], np.int64), np.array([4, 5], np.int64)]
    check_op("Concat", inputs, {"axis": -1}, opset=opset)


def test_concat_axis_required_from_4():
    with pytest.raises(ModelError, match=r"required attribute 'axis' is missing"):
        make_op("Concat", {}, 4)


def test_concat_1_defaults_to_axis_1():
    a, b = np.ones((2, 1), np.float32), np.zeros((2, 2), np.float32)
    check_op("Concat", [a, b], opset=1, expected=[np.concatenate([a, b], axis=1)])
