import numpy as np
import pytest

from systolic.errors import UnsupportedError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op

WINDOWS = ["HannWindow", "HammingWindow", "BlackmanWindow"]


@pytest.mark.parametrize("op_type", WINDOWS)
@pytest.mark.parametrize(("periodic", "size"), [(0, 2), (0, 10), (1, 1), (1, 2), (1, 10)])
def test_window(op_type, periodic, size):
    check_op(op_type, [np.array(size, np.int64)], {"periodic": periodic}, opset=17)


@pytest.mark.parametrize("op_type", WINDOWS)
def test_symmetric_window_of_one_sample_is_one(op_type):
    """onnx's ReferenceEvaluator divides by N - 1 = 0 here; numpy and PyTorch give [1]."""
    check_op(op_type, [np.array(1, np.int64)], {"periodic": 0}, opset=17,
             expected=[np.ones(1, np.float32)])


def test_output_datatype():
    (wide,) = check_op("HannWindow", [np.array(8, np.int32)],
                       {"output_datatype": int(DataType.DOUBLE)}, opset=17)
    (half,) = make_op("HannWindow", {"output_datatype": int(DataType.FLOAT16)}, 17).run(
        [np.array(8, np.int32)])
    np.testing.assert_array_equal(half, wide.astype(np.float16))


def test_hann_window_of_an_stft_front_end():
    (out,) = check_op("HannWindow", [np.array(400, np.int64)], opset=17)
    np.testing.assert_allclose(out, np.hanning(401)[:400], atol=1e-6)


def test_size_unknown_at_compile_time_is_unsupported():
    with pytest.raises(UnsupportedError, match=r"size is computed at run time"):
        make_op("HannWindow", {}, 17).infer([TensorInfo(DataType.INT64, ())])
