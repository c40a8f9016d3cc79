import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng


@pytest.mark.parametrize("opset", [1, 13, 21, 23])
@pytest.mark.parametrize("perm", [None, [0, 2, 1, 3], [3, 0, 1, 2]])
def test_transpose(opset, perm):
    attrs = {} if perm is None else {"perm": perm}
    check_op("Transpose", [rng(43).standard_normal((2, 3, 4, 5)).astype(np.float32)], attrs,
             opset=opset)


def test_transpose_rejects_bad_perm():
    with pytest.raises(ModelError, match=r"perm \[0, 0\] is not a permutation of 2 axes"):
        make_op("Transpose", {"perm": [0, 0]}, 13).run([np.zeros((2, 3), np.float32)])
