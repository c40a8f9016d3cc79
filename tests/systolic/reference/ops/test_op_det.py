import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

R = rng(123)


@pytest.mark.parametrize("opset", [11, 22])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2)])
def test_det(opset, shape):
    check_op("Det", [R.standard_normal(shape).astype(np.float32)], opset=opset, rtol=1e-4,
             atol=1e-5)


def test_det_needs_square_matrices():
    with pytest.raises(ModelError, match=r"must end in a square matrix"):
        make_op("Det", {}, 22).run([np.zeros((2, 3), np.float32)])
