import numpy as np
import pytest

from systolic.errors import ModelError, UnsupportedError

from ..oracle import check_op, make_op


@pytest.mark.parametrize("opset", [1, 9, 11, 13, 19, 21, 23])
def test_constant_value(opset):
    check_op("Constant", [], {"value": np.arange(6, dtype=np.float32).reshape(2, 3)}, opset=opset)


@pytest.mark.parametrize(("name", "value"), [
    ("value_float", 1.5), ("value_floats", [1.0, 2.0]), ("value_int", 3), ("value_ints", [4, 5]),
])
def test_constant_scalar_attributes(name, value):
    check_op("Constant", [], {name: value}, opset=13)


def test_constant_needs_exactly_one_value():
    with pytest.raises(ModelError, match=r"needs exactly one of"):
        make_op("Constant", {"value_int": 1, "value_float": 2.0}, 13)


def test_sparse_value_is_unsupported():
    with pytest.raises(UnsupportedError, match=r"sparse_value is not supported"):
        make_op("Constant", {"sparse_value": 0}, 13)


@pytest.mark.parametrize("opset", [9, 20, 21, 23])
@pytest.mark.parametrize("value", [None, np.array([7], np.int64), np.array([0.5], np.float32)])
def test_constant_of_shape(opset, value):
    attrs = {} if value is None else {"value": value}
    check_op("ConstantOfShape", [np.array([2, 3], np.int64)], attrs, opset=opset)
