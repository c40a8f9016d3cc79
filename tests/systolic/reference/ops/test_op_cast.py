import numpy as np
import pytest
from onnx import TensorProto

from ..oracle import check_op, rng

X = (rng(51).standard_normal((3, 4)) * 50).astype(np.float32)


@pytest.mark.parametrize("opset", [6, 9, 13, 19, 21, 23])
@pytest.mark.parametrize("to", [TensorProto.INT32, TensorProto.INT64, TensorProto.DOUBLE,
                                TensorProto.FLOAT16, TensorProto.BOOL])
def test_cast(opset, to):
    check_op("Cast", [X], {"to": to}, opset=opset)


def test_cast_int64_to_float():
    check_op("Cast", [np.array([1, -2, 3], np.int64)], {"to": TensorProto.FLOAT}, opset=13)


def test_cast_1_takes_a_type_name():
    check_op("Cast", [X], {"to": "INT32"}, opset=1, expected=[X.astype(np.int32)])
