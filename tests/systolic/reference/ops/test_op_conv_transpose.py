import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng, run_ours
from ..ort_oracle import run_ort

CASES = [
    # (X shape, W shape, attributes)
    ((1, 2, 4, 4), (2, 3, 3, 3), {}),
    ((2, 3, 3, 5), (3, 2, 2, 2), {"strides": [2, 2]}),
    ((1, 2, 4, 4), (2, 4, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                  "output_padding": [1, 1]}),
    ((1, 4, 3, 3), (4, 2, 3, 3), {"group": 2, "strides": [2, 1], "pads": [0, 1, 2, 0]}),
    ((1, 2, 4, 4), (2, 2, 3, 3), {"dilations": [2, 2], "strides": [3, 2]}),
    ((1, 2, 4, 4), (2, 2, 3, 3), {"dilations": [2, 1], "output_padding": [1, 0],
                                  "strides": [2, 1]}),
    ((1, 2, 3, 3), (2, 2, 4, 4), {"strides": [2, 2], "output_shape": [8, 7]}),
    ((1, 6, 4, 4), (6, 1, 3, 3), {"group": 6, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 2, 5), (2, 3, 3), {"strides": [2]}),  # 1-D
]


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose_matches_oracle_and_onnxruntime(x_shape, w_shape, attrs, bias):
    r = rng(78)
    x = r.standard_normal(x_shape).astype(np.float32)
    w = r.standard_normal(w_shape).astype(np.float32)
    inputs = [x, w] + ([r.standard_normal(w_shape[1] * attrs.get("group", 1)).astype(
        np.float32)] if bias else [])
    # onnx's reference evaluator mishandles groups and output_shape (onnx 1.23): onnxruntime
    # is the oracle there.
    if attrs.get("group", 1) == 1 and "output_shape" not in attrs:
        check_op("ConvTranspose", inputs, attrs, opset=11, atol=1e-5)
    check_op("ConvTranspose", inputs, attrs, opset=22, atol=1e-5,
             expected=run_ort("ConvTranspose", inputs, attrs, opset=11))


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("kernel", [2, 3])
def test_conv_transpose_auto_pad_matches_oracle(auto_pad, kernel):
    r = rng(79)
    x = r.standard_normal((1, 2, 3, 4)).astype(np.float32)
    w = r.standard_normal((2, 2, kernel, kernel)).astype(np.float32)
    attrs = {"auto_pad": auto_pad, "strides": [2, 2]}
    check_op("ConvTranspose", [x, w], attrs, opset=11, atol=1e-5)
    check_op("ConvTranspose", [x, w], attrs, opset=11, atol=1e-5,
             expected=run_ort("ConvTranspose", [x, w], attrs, opset=11))


def test_conv_transpose_float64():
    r = rng(80)
    x, w = r.standard_normal((1, 2, 3, 3)), r.standard_normal((2, 2, 2, 2))
    check_op("ConvTranspose", [x, w], {"strides": [2, 2]}, opset=11)


def test_conv_transpose_refuses_large_output_padding():
    x, w = np.zeros((1, 2, 3, 3), np.float32), np.zeros((2, 2, 3, 3), np.float32)
    with pytest.raises(ModelError, match=r"output_padding \[2, 2\] must be smaller than the "
                                         r"stride or the dilation"):
        run_ours("ConvTranspose", [x, w], {"strides": [2, 2], "output_padding": [2, 2]}, 11)


def test_conv_transpose_refuses_unknown_auto_pad():
    with pytest.raises(ModelError, match=r"auto_pad 'SAME' is not one of NOTSET"):
        make_op("ConvTranspose", {"auto_pad": "SAME"}, 11)
