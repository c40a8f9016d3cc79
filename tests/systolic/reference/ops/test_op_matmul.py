import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

SHAPES = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (3, 4, 2)),
    ((4,), (4, 5)),
    ((2, 3, 4), (4,)),
    ((4,), (4,)),
]


@pytest.mark.parametrize("opset", [1, 9, 13])
@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPES)
def test_matmul_matches_oracle(a_shape, b_shape, opset):
    r = rng(6)
    a = r.standard_normal(a_shape).astype(np.float32)
    b = r.standard_normal(b_shape).astype(np.float32)
    check_op("MatMul", [a, b], opset=opset)


def test_matmul_int32():
    r = rng(7)
    a, b = r.integers(-50, 50, (2, 3, 4), np.int32), r.integers(-50, 50, (4, 2), np.int32)
    check_op("MatMul", [a, b], opset=13)


def test_matmul_rejects_inner_mismatch():
    with pytest.raises(ModelError, match=r"inner dimensions differ: A is \[3, 4\], B is \[5, 2\]"):
        make_op("MatMul", {}, 13).run([np.zeros((3, 4), np.float32), np.zeros((5, 2), np.float32)])
