import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

DATA = rng(93).standard_normal((2, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -2, 0, 1, 7])
def test_trilu(upper, k):
    inputs = [DATA] if k is None else [DATA, np.array(k, np.int64)]
    check_op("Trilu", inputs, {"upper": upper}, opset=14)


def test_causal_mask_of_booleans():
    ones = np.ones((1, 1, 5, 5), np.bool_)
    (out,) = check_op("Trilu", [ones, np.array(1, np.int64)], {"upper": 1}, opset=14)
    assert out[0, 0, 0].tolist() == [False, True, True, True, True]


def test_rank_one_is_a_model_error():
    with pytest.raises(ModelError, match=r"rank 2 or more"):
        make_op("Trilu", {}, 14).infer([TensorInfo(DataType.FLOAT, (5,))])
