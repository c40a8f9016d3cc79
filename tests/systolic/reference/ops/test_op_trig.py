import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

WIDE = (rng(105).standard_normal(16) * 2).astype(np.float32)
UNIT = rng(106).uniform(-0.99, 0.99, 16).astype(np.float32)
ABOVE_ONE = rng(107).uniform(1.0, 5.0, 16).astype(np.float32)
CASES = [("Tan", 7, WIDE), ("Atan", 7, WIDE), ("Asin", 7, UNIT), ("Acos", 7, UNIT),
         ("Sinh", 9, WIDE), ("Cosh", 9, WIDE), ("Asinh", 9, WIDE), ("Acosh", 9, ABOVE_ONE),
         ("Atanh", 9, UNIT)]


@pytest.mark.parametrize(("op_type", "first", "x"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("later", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trig(op_type, first, x, later, dtype):
    check_op(op_type, [x.astype(dtype)], opset=22 if later else first, rtol=1e-5, atol=1e-6)


def test_outside_the_domain_is_nan():
    (out,) = make_op("Asin", {}, 7).run([np.array([2.0], np.float32)])
    assert np.isnan(out).all()


def test_trig_refuses_integers():
    with pytest.raises(ModelError, match=r"X has element type i32"):
        make_op("Tan", {}, 7).infer([TensorInfo(DataType.INT32, (2,))])
