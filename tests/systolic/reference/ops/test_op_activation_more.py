import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

X = (rng(102).standard_normal((3, 8)) * 3).astype(np.float32)


@pytest.mark.parametrize("opset", [1, 22])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softsign(opset, dtype):
    check_op("Softsign", [X.astype(dtype)], opset=opset)


@pytest.mark.parametrize("alpha", [None, 0.5, 2.0])
def test_celu(alpha):
    check_op("Celu", [X], {} if alpha is None else {"alpha": alpha}, opset=12)


def test_celu_is_float32_only():
    with pytest.raises(ModelError, match=r"X has element type f64"):
        make_op("Celu", {}, 12).infer([TensorInfo(DataType.DOUBLE, (2,))])


@pytest.mark.parametrize("opset", [10, 22])
@pytest.mark.parametrize("alpha", [None, 0.0, 2.0])
def test_thresholded_relu(opset, alpha):
    check_op("ThresholdedRelu", [X], {} if alpha is None else {"alpha": alpha}, opset=opset)


@pytest.mark.parametrize(("lambd", "bias"), [(None, None), (1.0, 0.5), (2.5, 2.0)])
def test_shrink_floats(lambd, bias):
    attrs = {k: v for k, v in (("lambd", lambd), ("bias", bias)) if v is not None}
    check_op("Shrink", [X], attrs, opset=9)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8])
def test_shrink_integers(dtype):
    x = rng(103).integers(0 if dtype is np.uint8 else -9, 9, (4, 5)).astype(dtype)
    check_op("Shrink", [x], {"lambd": 1.5, "bias": 1.0}, opset=9)
