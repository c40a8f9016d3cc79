import numpy as np
import pytest

from ..oracle import check_op, rng

X = rng(53).standard_normal((2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("opset", [1, 11, 13])
@pytest.mark.parametrize("axes", [None, [1], [0, 2]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_mean_attribute(opset, axes, keepdims):
    attrs = {"keepdims": keepdims} if axes is None else {"axes": axes, "keepdims": keepdims}
    check_op("ReduceMean", [X], attrs, opset=opset)


@pytest.mark.parametrize("axes", [None, [-1], [0, 1]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_mean_input(axes, keepdims):
    inputs = [X] if axes is None else [X, np.array(axes, np.int64)]
    check_op("ReduceMean", inputs, {"keepdims": keepdims}, opset=18)


def test_reduce_mean_noop_with_empty_axes():
    check_op("ReduceMean", [X], {"noop_with_empty_axes": 1}, opset=18)
