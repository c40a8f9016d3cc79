import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

DATA = rng(53).standard_normal((2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize("indices", [
    [[1]],
    [[0, 2], [1, 0]],
    [[[1, 2, 3]], [[0, 0, -1]]],
    [[-1, -3]],
])
def test_gather_nd(opset, indices):
    check_op("GatherND", [DATA, np.array(indices, np.int64)], opset=opset)


@pytest.mark.parametrize("indices", [[[1], [0]], [[[2, 3]], [[0, 1]]]])
def test_gather_nd_batch_dims(indices):
    check_op("GatherND", [DATA, np.array(indices, np.int64)], {"batch_dims": 1}, opset=13)


def test_gather_nd_folds_shape_values():
    shape = np.array([[1, 3], [224, 224]], np.int64)
    check_op("GatherND", [shape, np.array([[1, 0]], np.int64)], opset=13, known=[0, 1])


def test_gather_nd_index_out_of_range():
    with pytest.raises(ModelError, match=r"an index is outside the data's axes \[2, 3\]"):
        make_op("GatherND", {}, 13).run([DATA, np.array([[0, 3]], np.int64)])


def test_gather_nd_too_deep():
    with pytest.raises(ModelError, match=r"indices address 4 axes but data has 3"):
        make_op("GatherND", {}, 13).run([DATA, np.zeros((1, 4), np.int64)])
