import numpy as np
import pytest

from ..oracle import check_op, rng
from ..ort_oracle import run_ort


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize(("opset", "axis"), [(1, 1), (1, 2), (11, -1), (11, 0), (13, 1), (13, -1),
                                             (13, 0)])
def test_softmax(op_type, opset, axis):
    x = (rng(45).standard_normal((2, 3, 4)) * 5).astype(np.float32)
    # onnx's reference applies the opset-13 single-axis rule to every version: before 13 the
    # oracle is onnxruntime, which coerces to 2-D as the spec says.
    expected = run_ort(op_type, [x], {"axis": axis}, opset=opset) if opset < 13 else None
    check_op(op_type, [x], {"axis": axis}, opset=opset, expected=expected)


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [1, 13])
def test_softmax_default_axis(op_type, opset):
    x = rng(46).standard_normal((2, 3, 4)).astype(np.float32)
    expected = run_ort(op_type, [x], opset=opset) if opset < 13 else None
    check_op(op_type, [x], opset=opset, expected=expected)
