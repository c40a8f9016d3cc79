import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op

X = np.arange(12, dtype=np.float32).reshape(1, 3, 1, 4)


@pytest.mark.parametrize("opset", [1, 11])
@pytest.mark.parametrize("axes", [None, [0], [0, 2]])
def test_squeeze_attribute(opset, axes):
    check_op("Squeeze", [X], {} if axes is None else {"axes": axes}, opset=opset)


@pytest.mark.parametrize("opset", [13, 21, 23])
@pytest.mark.parametrize("axes", [None, [-2], [0, 2]])
def test_squeeze_input(opset, axes):
    inputs = [X] if axes is None else [X, np.array(axes, np.int64)]
    check_op("Squeeze", inputs, opset=opset)


@pytest.mark.parametrize("opset", [1, 11])
@pytest.mark.parametrize("axes", [[0], [1, 3], [4]])
def test_unsqueeze_attribute(opset, axes):
    check_op("Unsqueeze", [X], {"axes": axes}, opset=opset)


@pytest.mark.parametrize("opset", [13, 21, 23])
@pytest.mark.parametrize("axes", [[0], [-1], [1, 5]])
def test_unsqueeze_input(opset, axes):
    check_op("Unsqueeze", [X, np.array(axes, np.int64)], opset=opset)


def test_unsqueeze_folds_scalars():
    check_op("Unsqueeze", [np.array(3, np.int64), np.array([0], np.int64)], opset=13)


def test_squeeze_rejects_non_unit_axis():
    with pytest.raises(ModelError, match=r"cannot squeeze axis 1 of size 3"):
        make_op("Squeeze", {"axes": [1]}, 11).run([X])
