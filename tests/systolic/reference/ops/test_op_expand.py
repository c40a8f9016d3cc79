import numpy as np
import pytest

from ..oracle import check_op, rng


@pytest.mark.parametrize("opset", [8, 13])
@pytest.mark.parametrize(("x_shape", "shape"), [((3, 1), (2, 3, 4)), ((3, 4), (1, 1)),
                                                ((1, 4), (3, 1))])
def test_expand(opset, x_shape, shape):
    x = rng(52).standard_normal(x_shape).astype(np.float32)
    check_op("Expand", [x, np.array(shape, np.int64)], opset=opset)
