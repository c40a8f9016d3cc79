import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

X = rng(68).standard_normal((2, 3, 4)).astype(np.float32)
ATTR_AXES = {"ReduceMax": 13, "ReduceMin": 13, "ReduceSum": 11, "ReduceProd": 13}
INPUT_AXES = {"ReduceMax": 18, "ReduceMin": 20, "ReduceSum": 13, "ReduceProd": 18}


@pytest.mark.parametrize("op_type", sorted(ATTR_AXES))
@pytest.mark.parametrize("axes", [None, [1], [0, -1]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_attribute(op_type, axes, keepdims):
    attrs = {"keepdims": keepdims} if axes is None else {"axes": axes, "keepdims": keepdims}
    check_op(op_type, [X], attrs, opset=ATTR_AXES[op_type])


@pytest.mark.parametrize("op_type", sorted(INPUT_AXES))
@pytest.mark.parametrize("axes", [None, [-1], [0, 2]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_input(op_type, axes, keepdims):
    inputs = [X] if axes is None else [X, np.array(axes, np.int64)]
    check_op(op_type, inputs, {"keepdims": keepdims}, opset=INPUT_AXES[op_type])


@pytest.mark.parametrize("op_type", sorted(INPUT_AXES))
def test_reduce_noop_with_empty_axes(op_type):
    check_op(op_type, [X], {"noop_with_empty_axes": 1}, opset=INPUT_AXES[op_type])


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceProd", "ReduceMax"])
def test_reduce_int32(op_type):
    x = rng(69).integers(-5, 6, (3, 4)).astype(np.int32)
    check_op(op_type, [x], {"axes": [1]}, opset=11, known=[])


def test_reduce_max_bool():
    x = rng(70).random((3, 4)) < 0.3
    check_op("ReduceMax", [x, np.array([1], np.int64)], opset=20, known=[1])


def test_reduce_refuses_axes_attribute_after_it_became_an_input():
    with pytest.raises(ModelError, match=r"from ReduceSum-13 axes is an input, not an attribute"):
        make_op("ReduceSum", {"axes": [1]}, 13)
