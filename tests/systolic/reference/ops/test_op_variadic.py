import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng


@pytest.mark.parametrize("op_type", ["Sum", "Max", "Min"])
@pytest.mark.parametrize("opset", [6, 8, 13])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_same_shapes(op_type, opset, count):
    r = rng(20)
    inputs = [r.standard_normal((2, 3)).astype(np.float32) for _ in range(count)]
    check_op(op_type, inputs, opset=opset)


@pytest.mark.parametrize("op_type", ["Sum", "Max", "Min"])
@pytest.mark.parametrize("opset", [8, 12, 13])
def test_broadcast_from_8(op_type, opset):
    r = rng(21)
    shapes = [(2, 1, 4), (3, 1), (4,)]
    check_op(op_type, [r.standard_normal(s).astype(np.float32) for s in shapes], opset=opset)


def test_no_broadcast_before_8():
    with pytest.raises(ModelError, match=r"before opset 8 they must all be equal"):
        make_op("Sum", {}, 6).run([np.zeros((2, 3), np.float32), np.zeros(3, np.float32)])
