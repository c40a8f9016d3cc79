import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

X = rng(110).standard_normal((4, 3, 2)).astype(np.float32)


@pytest.mark.parametrize(("batch_axis", "time_axis", "lens"), [
    (1, 0, [4, 1, 2]),
    (1, 0, [0, 4, 3]),
    (0, 1, [3, 1, 2, 3]),
])
def test_reverse_sequence(batch_axis, time_axis, lens):
    x = X if batch_axis == 1 else X.transpose(0, 1, 2).copy()
    check_op("ReverseSequence", [x, np.array(lens, np.int64)],
             {"batch_axis": batch_axis, "time_axis": time_axis}, opset=10)


@pytest.mark.parametrize(("lens", "message"), [
    ([4, 1], r"sequence_lens has shape \[2\]; expected \[3\]"),
    ([5, 1, 1], r"must be between 0 and 4"),
])
def test_bad_lengths(lens, message):
    with pytest.raises(ModelError, match=message):
        make_op("ReverseSequence", {}, 10).run([X, np.array(lens, np.int64)])


def test_axes_must_be_0_and_1():
    with pytest.raises(ModelError, match=r"must be 0 and 1"):
        make_op("ReverseSequence", {"batch_axis": 2}, 10)
