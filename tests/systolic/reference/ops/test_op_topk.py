import numpy as np
import pytest

from systolic.errors import ModelError, UnsupportedError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

R = rng(92)
DATA = R.standard_normal((3, 7)).astype(np.float32)
TIES = np.array([[3, 1, 3, 2, 3, 1], [0, 0, 5, 5, 0, 5]], np.int64)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("k", [1, 3])
def test_topk_1_takes_k_from_the_attribute(axis, k):
    check_op("TopK", [DATA], {"axis": axis, "k": k}, opset=1, n_outputs=2)


@pytest.mark.parametrize("k", [0, 2, 7])
def test_topk_10_takes_k_from_the_input(k):
    check_op("TopK", [DATA, np.array([k], np.int64)], {"axis": 1}, opset=10, n_outputs=2)


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
def test_topk_11_largest_and_smallest(largest, axis):
    check_op("TopK", [DATA, np.array([2], np.int64)], {"axis": axis, "largest": largest},
             opset=11, n_outputs=2)


@pytest.mark.parametrize("largest", [0, 1])
def test_ties_go_to_the_lower_index(largest):
    values, indices = check_op("TopK", [TIES, np.array([4], np.int64)],
                               {"largest": largest}, opset=11, n_outputs=2)
    if largest:
        assert indices.tolist() == [[0, 2, 4, 3], [2, 3, 5, 0]]
    else:
        assert indices.tolist() == [[1, 5, 3, 0], [0, 1, 4, 2]]
    np.testing.assert_array_equal(values, np.take_along_axis(TIES, indices, 1))


def test_unsorted_output_is_the_same_set():
    op = make_op("TopK", {"sorted": 0}, 11)
    values, indices = op.run([DATA, np.array([3], np.int64)])
    want = np.sort(DATA, axis=1)[:, ::-1][:, :3]
    np.testing.assert_array_equal(np.sort(values, 1), np.sort(want, 1))
    np.testing.assert_array_equal(np.take_along_axis(DATA, indices, 1), values)


def test_k_larger_than_the_axis_is_a_model_error():
    with pytest.raises(ModelError, match=r"K=8 must be between 0 and the axis's size 7"):
        make_op("TopK", {}, 11).run([DATA, np.array([8], np.int64)])


def test_k_unknown_at_compile_time_is_unsupported():
    op = make_op("TopK", {}, 11)
    with pytest.raises(UnsupportedError, match=r"K is computed at run time"):
        op.infer([TensorInfo(DataType.FLOAT, (3, 7)), TensorInfo(DataType.INT64, (1,))])


def test_integer_input_before_11_is_refused():
    op = make_op("TopK", {}, 10)
    with pytest.raises(ModelError, match=r"X has element type i64"):
        op.infer([TensorInfo(DataType.INT64, (3, 7)),
                  TensorInfo(DataType.INT64, (1,), np.array([2], np.int64))])
