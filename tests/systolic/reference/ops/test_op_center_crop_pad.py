import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

X = rng(122).standard_normal((5, 6, 3)).astype(np.float32)


@pytest.mark.parametrize(("shape", "axes"), [
    ([3, 8, 3], None), ([7, 3, 2], None), ([4, 7], [0, 1]), ([2], [-2]), ([5, 6, 3], None)])
def test_center_crop_pad(shape, axes):
    check_op("CenterCropPad", [X, np.array(shape, np.int64)], {} if axes is None else
             {"axes": axes}, opset=18)


def test_integer_data_and_int32_shape():
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    check_op("CenterCropPad", [x, np.array([2, 7], np.int32)], opset=18)


def test_one_size_per_axis():
    with pytest.raises(ModelError, match=r"must give one size \(not negative\) per axis"):
        make_op("CenterCropPad", {"axes": [0, 1]}, 18).run([X, np.array([2], np.int64)])
