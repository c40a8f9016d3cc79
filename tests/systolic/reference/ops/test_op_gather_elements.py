import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

DATA = rng(61).standard_normal((3, 4)).astype(np.float32)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize(("axis", "indices"), [
    (0, [[0, 2, 1, 1], [2, 0, 0, 1]]),
    (1, [[3, 0], [1, -1], [0, 0]]),
])
def test_gather_elements(opset, axis, indices):
    check_op("GatherElements", [DATA, np.array(indices, np.int64)], {"axis": axis},
             opset=opset)


def test_gather_elements_negative_axis():
    """axis -1 counts from the end (onnx's evaluator mishandles it: compared with numpy)."""
    indices = np.array([[-4], [2], [1]], np.int64)
    (out,) = make_op("GatherElements", {"axis": -1}, 13).run([DATA, indices])
    np.testing.assert_array_equal(out, np.take_along_axis(DATA, indices % 4, axis=1))


def test_gather_elements_int32_indices_and_integer_data():
    data = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    indices = rng(62).integers(0, 3, (2, 2, 4)).astype(np.int32)
    check_op("GatherElements", [data, indices], {"axis": 1}, opset=13)


def test_gather_elements_folds_constants():
    """BERT's buffered token type ids: a constant gathered by constant indices."""
    data = np.zeros((1, 16), np.int64)
    indices = np.arange(16, dtype=np.int64)[None]
    check_op("GatherElements", [data, indices], {"axis": 1}, opset=13, known=[0, 1])


def test_gather_elements_index_out_of_range():
    with pytest.raises(ModelError, match=r"an index is outside axis 1 of size 4"):
        make_op("GatherElements", {"axis": 1}, 13).run([DATA, np.array([[4]], np.int64)])


def test_gather_elements_rank_mismatch():
    with pytest.raises(ModelError, match=r"must have the same rank"):
        make_op("GatherElements", {}, 13).run([DATA, np.array([0], np.int64)])
