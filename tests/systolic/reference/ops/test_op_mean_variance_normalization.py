import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

X = (rng(117).standard_normal((2, 3, 4, 5)) * 3 + 1).astype(np.float32)


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("axes", [None, [0, 2, 3], [1], [-1, -2]])
def test_mean_variance_normalization(opset, axes):
    check_op("MeanVarianceNormalization", [X], {} if axes is None else {"axes": axes},
             opset=opset, rtol=1e-4, atol=1e-5)


def test_axis_out_of_range():
    with pytest.raises(ModelError, match=r"axis 4 is out of range"):
        make_op("MeanVarianceNormalization", {"axes": [4]}, 13).run([X])
