import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

R = rng(118)
X = R.standard_normal((2, 3, 8)).astype(np.float32)


@pytest.mark.parametrize(("axis", "scale_shape"), [(None, (8,)), (-1, (8,)), (1, (3, 8)),
                                                   (-2, (1, 8))])
@pytest.mark.parametrize("epsilon", [None, 1e-2])
def test_rms_normalization(axis, scale_shape, epsilon):
    attrs = {k: v for k, v in (("axis", axis), ("epsilon", epsilon)) if v is not None}
    scale = R.standard_normal(scale_shape).astype(np.float32)
    check_op("RMSNormalization", [X, scale], attrs, opset=23, rtol=1e-5, atol=1e-6)


def test_scale_that_does_not_broadcast():
    with pytest.raises(ModelError, match=r"do not broadcast"):
        make_op("RMSNormalization", {}, 23).infer(
            [TensorInfo(DataType.FLOAT, (2, 3, 8)), TensorInfo(DataType.FLOAT, (5,))])
