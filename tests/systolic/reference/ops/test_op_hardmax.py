import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

X = rng(104).integers(0, 4, (2, 3, 4)).astype(np.float32)


def _on_2d_view(x: np.ndarray, axis: int) -> np.ndarray:
    """Hardmax-1/-11's spec: x seen as (prod(shape[:axis]), prod(shape[axis:])), the 1 at
    each row's first maximum. onnx's ReferenceEvaluator applies the 13 rule to every
    version, so it is no oracle here."""
    rows = x.reshape(int(np.prod(x.shape[:axis])), -1)
    out = np.zeros_like(rows)
    out[np.arange(rows.shape[0]), rows.argmax(axis=1)] = 1
    return out.reshape(x.shape)


@pytest.mark.parametrize("opset", [1, 11])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1])
def test_hardmax_on_the_2d_view(opset, axis):
    cut = 1 if axis is None else axis % X.ndim
    check_op("Hardmax", [X], {} if axis is None else {"axis": axis}, opset=opset,
             expected=[_on_2d_view(X, cut)])


def test_hardmax_on_the_last_axis_agrees_with_the_oracle():
    check_op("Hardmax", [X], {"axis": 2}, opset=11)


@pytest.mark.parametrize("axis", [None, 0, 1, -2])
def test_hardmax_13_along_one_axis(axis):
    check_op("Hardmax", [X], {} if axis is None else {"axis": axis}, opset=13)


def test_first_of_equal_maxima_wins():
    (out,) = check_op("Hardmax", [np.array([[1.0, 3.0, 3.0]], np.float32)], opset=13)
    assert out.tolist() == [[0, 1, 0]]


def test_axis_out_of_range():
    with pytest.raises(ModelError, match=r"axis 3 is out of range"):
        make_op("Hardmax", {"axis": 3}, 13).run([X])
