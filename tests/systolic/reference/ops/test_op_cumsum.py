import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

DATA = rng(71).standard_normal((2, 5)).astype(np.float32)


@pytest.mark.parametrize("opset", [11, 14])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(opset, axis, exclusive, reverse):
    check_op("CumSum", [DATA, np.array(axis, np.int64)],
             {"exclusive": exclusive, "reverse": reverse}, opset=opset)


def test_cumsum_positions_from_a_mask():
    """RoBERTa's position ids: cumsum of the int32 padding mask along the sequence."""
    mask = np.array([[1, 1, 1, 0, 0]], np.int32)
    check_op("CumSum", [mask, np.array(1, np.int32)], {}, opset=14)


def test_cumsum_axis_out_of_range():
    with pytest.raises(ModelError, match=r"axis 2 is out of range"):
        make_op("CumSum", {}, 14).run([DATA, np.array(2, np.int64)])
