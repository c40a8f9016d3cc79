import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

DATA = rng(49).standard_normal((4, 5, 6)).astype(np.float32)


@pytest.mark.parametrize("opset", [1, 11, 13])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("indices", [np.array(1), np.array([0, 3]), np.array([[1, 0], [2, 3]])])
def test_gather(opset, axis, indices):
    check_op("Gather", [DATA, indices.astype(np.int64)], {"axis": axis}, opset=opset)


def test_gather_negative_indices_and_axis():
    check_op("Gather", [DATA, np.array([-1, 0], np.int32)], {"axis": -2}, opset=13)


def test_gather_folds_shape_values():
    shape = np.array([1, 3, 224, 224], np.int64)
    check_op("Gather", [shape, np.array(0, np.int64)], opset=13, known=[0, 1])


def test_gather_index_out_of_range():
    with pytest.raises(ModelError, match=r"an index is outside \[-4, 3\] on axis 0"):
        make_op("Gather", {}, 13).run([DATA, np.array([4], np.int64)])
