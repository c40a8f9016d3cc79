import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

CASES = [
    # x shape, w shape, attrs
    ((2, 4, 9), (6, 2, 3), {"group": 2, "strides": [2], "pads": [1, 2], "dilations": [2]}),
    ((1, 3, 8, 7), (5, 3, 3, 3), {}),
    ((1, 3, 8, 7), (5, 3, 3, 2), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 2, 1]}),
    ((1, 4, 8, 8), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),  # depthwise
    ((1, 3, 7, 8), (2, 3, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 3, 7, 8), (2, 3, 2, 4), {"auto_pad": "SAME_LOWER", "strides": [2, 3]}),
    ((1, 3, 7, 8), (2, 3, 3, 3), {"auto_pad": "VALID", "dilations": [2, 1]}),
    ((1, 2, 5, 6, 4), (3, 2, 2, 3, 1), {"strides": [1, 1, 2], "pads": [0, 1, 0, 1, 0, 1]}),
]


@pytest.mark.parametrize("opset", [1, 11, 22])
@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_matches_oracle(x_shape, w_shape, attrs, opset, bias):
    r = rng(1)
    x = r.standard_normal(x_shape).astype(np.float32)
    w = r.standard_normal(w_shape).astype(np.float32)
    b = r.standard_normal(w_shape[0]).astype(np.float32) if bias else None
    check_op("Conv", [x, w] if b is None else [x, w, b], attrs, opset=opset, atol=1e-5)


def test_conv_float64():
    r = rng(2)
    x, w = r.standard_normal((1, 2, 5, 5)), r.standard_normal((3, 2, 2, 2))
    check_op("Conv", [x, w], {"pads": [1, 1, 0, 0]}, opset=11)


def test_conv_rejects_group_mismatch():
    op = make_op("Conv", {"group": 3}, 11)
    with pytest.raises(ModelError, match=r"with group=3, W must be"):
        op.run([np.zeros((1, 4, 5, 5), np.float32), np.zeros((3, 2, 3, 3), np.float32)])


def test_conv_rejects_bad_auto_pad():
    with pytest.raises(ModelError, match=r"^node 'node' \(ai.onnx.Conv:11\): auto_pad 'SAME'"):
        make_op("Conv", {"auto_pad": "SAME"}, 11)
