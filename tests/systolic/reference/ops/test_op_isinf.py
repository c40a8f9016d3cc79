import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op

X = np.array([np.inf, -np.inf, np.nan, 0.0, 1e38, -3.0], np.float32)


@pytest.mark.parametrize("opset", [10, 20])
@pytest.mark.parametrize(("positive", "negative"), [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_isinf(opset, positive, negative):
    (out,) = check_op("IsInf", [X], {"detect_positive": positive, "detect_negative": negative},
                      opset=opset)
    assert out.tolist() == [bool(positive), bool(negative), False, False, False, False]


def test_isinf_refuses_integers():
    with pytest.raises(ModelError, match=r"X has element type i64"):
        make_op("IsInf", {}, 20).infer([TensorInfo(DataType.INT64, (2,))])
