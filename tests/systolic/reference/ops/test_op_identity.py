import numpy as np
import pytest

from ..oracle import check_op, rng


@pytest.mark.parametrize("opset", [1, 13, 14, 16, 19, 21, 23])
def test_identity(opset):
    check_op("Identity", [rng(48).standard_normal((2, 3)).astype(np.float32)], opset=opset)
