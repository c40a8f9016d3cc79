import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

R = rng(101)


@pytest.mark.parametrize("opset", [1, 6, 8, 13])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_mean_of_equal_shapes(opset, count):
    check_op("Mean", [R.standard_normal((2, 3)).astype(np.float32) for _ in range(count)],
             opset=opset)


def test_mean_broadcasts_from_8():
    check_op("Mean", [R.standard_normal((2, 3)).astype(np.float32),
                      R.standard_normal((3,)).astype(np.float32)], opset=13)


def test_mean_refuses_integers_and_unequal_shapes_before_8():
    with pytest.raises(ModelError, match=r"an input has element type i32"):
        make_op("Mean", {}, 13).infer([TensorInfo(DataType.INT32, (2,))])
    with pytest.raises(ModelError, match=r"before opset 8 they must all be equal"):
        make_op("Mean", {}, 6).infer([TensorInfo(DataType.FLOAT, (2, 3)),
                                      TensorInfo(DataType.FLOAT, (3,))])
