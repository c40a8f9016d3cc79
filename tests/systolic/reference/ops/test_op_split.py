import numpy as np
import pytest

from ..oracle import check_op, rng

X = rng(56).standard_normal((6, 4)).astype(np.float32)


@pytest.mark.parametrize("opset", [2, 11])
@pytest.mark.parametrize(("attrs", "count"), [({}, 2), ({"split": [1, 5]}, 2),
                                              ({"axis": 1, "split": [1, 1, 2]}, 3)])
def test_split_attribute(opset, attrs, count):
    check_op("Split", [X], attrs, opset=opset, n_outputs=count)


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("split", [None, [2, 4], [3, 3]])
def test_split_input(opset, split):
    inputs = [X] if split is None else [X, np.array(split, np.int64)]
    attrs = {"num_outputs": 2} if opset == 18 and split is None else {}
    check_op("Split", inputs, attrs, opset=opset, n_outputs=2)


def test_split_num_outputs_uneven():
    x = rng(57).standard_normal((7, 2)).astype(np.float32)
    check_op("Split", [x], {"num_outputs": 3}, opset=18, n_outputs=3)
