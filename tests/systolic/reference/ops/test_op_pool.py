import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng
from ..ort_oracle import run_ort

GEOMETRIES = [
    ((1, 2, 7), {"kernel_shape": [3], "strides": [2]}),
    ((2, 3, 8, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 2, 8, 7), {"kernel_shape": [2, 3], "pads": [0, 1, 1, 0]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 2], "strides": [2, 3], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 7, 8), {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 3], "auto_pad": "VALID"}),
    ((1, 2, 5, 4, 6), {"kernel_shape": [2, 2, 3], "strides": [1, 2, 2]}),
]
CEIL = [
    ((1, 2, 8, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 2, 9, 9), {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 0, 0],
                    "ceil_mode": 1}),
]


def _x(shape):
    return rng(30).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("opset", [8, 11, 12, 22])
@pytest.mark.parametrize(("shape", "attrs"), GEOMETRIES)
def test_max_pool(opset, shape, attrs):
    x = _x(shape)
    # onnx's reference pads SAME_LOWER windows wrongly (one output row short): ORT instead.
    expected = run_ort("MaxPool", [x], attrs, opset=opset) if "SAME" in str(attrs) else None
    check_op("MaxPool", [x], attrs, opset=opset, expected=expected)


@pytest.mark.parametrize("opset", [10, 12])
@pytest.mark.parametrize(("shape", "attrs"), CEIL)
def test_max_pool_ceil_mode(opset, shape, attrs):
    check_op("MaxPool", [_x(shape)], attrs, opset=opset)


def test_max_pool_dilations():
    attrs = {"kernel_shape": [2, 2], "dilations": [2, 1], "pads": [1, 0, 1, 1]}
    check_op("MaxPool", [_x((1, 2, 7, 6))], attrs, opset=12)


def test_max_pool_int8_pads_never_win():
    x = np.full((1, 1, 3, 3), -128, np.int8)
    x[0, 0, 1, 1] = -100
    attrs = {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1]}
    # onnx's reference pads integers with NaN and fails: ORT instead.
    check_op("MaxPool", [x], attrs, opset=12, known=[], expected=run_ort("MaxPool", [x], attrs,
                                                                          opset=12))


@pytest.mark.parametrize("opset", [7, 11, 19, 22])
@pytest.mark.parametrize(("shape", "attrs"), GEOMETRIES)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(opset, shape, attrs, count_include_pad):
    x, attrs = _x(shape), {**attrs, "count_include_pad": count_include_pad}
    # onnx's reference never counts SAME padding cells: ORT is the oracle for SAME.
    same = "SAME" in str(attrs)
    expected = run_ort("AveragePool", [x], attrs, opset=opset) if same else None
    check_op("AveragePool", [x], attrs, opset=opset, expected=expected)


@pytest.mark.parametrize(("shape", "attrs"), CEIL)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_ceil_mode(shape, attrs, count_include_pad):
    check_op("AveragePool", [_x(shape)], {**attrs, "count_include_pad": count_include_pad},
             opset=19)


def test_average_pool_dilations():
    attrs = {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]}
    check_op("AveragePool", [_x((1, 2, 7, 6))], attrs, opset=19)


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("opset", [1, 22])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 6, 7), (1, 2, 3, 4, 5)])
def test_global_pool(op_type, opset, shape):
    # onnx's reference GlobalMaxPool keeps only 2-D spatial shapes right: ORT is the oracle.
    x = _x(shape)
    check_op(op_type, [x], opset=opset, expected=run_ort(op_type, [x], opset=max(opset, 7)))


def test_dilations_need_average_pool_19():
    with pytest.raises(ModelError, match=r"attribute 'dilations' needs AveragePool-19 or later"):
        make_op("AveragePool", {"kernel_shape": [2], "dilations": [2]}, 11)


def test_kernel_shape_is_required():
    with pytest.raises(ModelError, match=r"required attribute 'kernel_shape' is missing"):
        make_op("MaxPool", {}, 12)
