import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

DATA = rng(61).standard_normal((4, 3, 2)).astype(np.float32)


@pytest.mark.parametrize("opset", [11, 13, 16, 18])
@pytest.mark.parametrize(("indices", "updates_shape"), [
    ([[1]], (1, 3, 2)),
    ([[0, 2], [3, 1]], (2, 2)),
    ([[[1, 2, 1]], [[0, 0, -1]]], (2, 1)),
    ([[-1, -3]], (1, 2)),
])
def test_scatter_nd(opset, indices, updates_shape):
    updates = rng(62).standard_normal(updates_shape).astype(np.float32)
    check_op("ScatterND", [DATA, np.array(indices, np.int64), updates], opset=opset)


@pytest.mark.parametrize(("reduction", "opset"), [("add", 16), ("mul", 16), ("max", 18),
                                                  ("min", 18)])
def test_scatter_nd_reductions_combine_repeated_indices(reduction, opset):
    updates = rng(63).standard_normal((3, 2)).astype(np.float32)
    indices = np.array([[1, 0], [1, 0], [2, 2]], np.int64)
    check_op("ScatterND", [DATA, indices, updates], {"reduction": reduction}, opset=opset)


def test_scatter_nd_folds_a_constant_mask():
    """Swin's shifted-window mask: zeros with regions set to a region number, folded."""
    mask = np.zeros((1, 4, 4, 1), np.float32)
    indices = np.array([[[0, 2]], [[0, 3]]], np.int64)
    check_op("ScatterND", [mask, indices, np.ones((2, 1, 4, 1), np.float32)], opset=13,
             known=[0, 1, 2])


def test_scatter_nd_checks_updates_shape():
    with pytest.raises(ModelError, match=r"updates have shape \[2\], expected \[1, 2\]"):
        make_op("ScatterND", {}, 13).run([DATA, np.array([[0, 1]], np.int64),
                                          np.zeros(2, np.float32)])


def test_scatter_nd_max_needs_opset_18():
    with pytest.raises(ModelError, match="reduction 'max' is not one of none, add, mul"):
        make_op("ScatterND", {"reduction": "max"}, 16)
