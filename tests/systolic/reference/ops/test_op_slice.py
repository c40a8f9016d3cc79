import numpy as np
import pytest

from ..oracle import check_op, rng

X = rng(55).standard_normal((5, 6, 7)).astype(np.float32)
BIG = 2**63 - 1
CASES = [
    ([1], [3], None, None),
    ([0, 1], [5, -1], [0, 2], None),
    ([-1], [-BIG], [1], [-2]),
    ([BIG], [0], [0], [-1]),
    ([0, 2], [BIG, 7], [-1, 1], [3, 2]),
]


@pytest.mark.parametrize("opset", [10, 11, 13])
@pytest.mark.parametrize(("starts", "ends", "axes", "steps"), CASES)
def test_slice_inputs(opset, starts, ends, axes, steps):
    if opset == 10 and axes:
        axes = [a % X.ndim for a in axes]  # negative axes need Slice-11
    inputs = [X, np.array(starts, np.int64), np.array(ends, np.int64)]
    if axes is not None or steps is not None:
        inputs.append(np.array(axes if axes is not None else range(len(starts)), np.int64))
    if steps is not None:
        inputs.append(np.array(steps, np.int64))
    check_op("Slice", inputs, opset=opset)


def test_slice_attributes_version_1():
    attrs = {"starts": [1, 0], "ends": [4, -2], "axes": [0, 2]}
    check_op("Slice", [X], attrs, opset=1, expected=[X[1:4, :, 0:-2]])
