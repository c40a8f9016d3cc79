import numpy as np
import onnx.defs
import pytest

from systolic.errors import ModelError, UnsupportedError
from systolic.reference import registry

from ..oracle import make_op, rng, run_ours
from ..ort_oracle import check_ort


def test_since_versions_follow_onnx_schema_history():
    history = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                      if s.name == "DequantizeLinear" and s.domain == ""})
    low, high = registry.SUPPORTED_OPSETS[""]
    assert registry.versions_of("", "DequantizeLinear") == [v for v in history if low <= v <= high]


@pytest.mark.parametrize("opset", [10, 13, 21, 23])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16])
@pytest.mark.parametrize("scale", [1e-4, 0.0371, 10.0])
def test_per_tensor_matches_onnxruntime(opset, dtype, scale):
    if opset < 21 and np.dtype(dtype).itemsize == 2:
        pytest.skip("16-bit inputs exist from version 21")
    info = np.iinfo(dtype)
    r = rng(1)
    for zp in (info.min, 0, info.max):
        x = r.integers(info.min, info.max + 1, (5, 40)).astype(dtype)
        check_ort("DequantizeLinear", [x, np.float32(scale), np.array(zp, dtype)], opset=opset)


@pytest.mark.parametrize("axis", [0, 2, -2])
def test_per_axis_matches_onnxruntime(axis):
    r = rng(2)
    x = r.integers(-128, 128, (3, 4, 5)).astype(np.int8)
    n = x.shape[axis]
    scale = (10 ** r.uniform(-4, 1, n)).astype(np.float32)
    zp = r.integers(-128, 128, n).astype(np.int8)
    check_ort("DequantizeLinear", [x, scale, zp], {"axis": axis}, opset=13)


def test_int32_input_matches_onnxruntime():
    x = rng(3).integers(-(2**31), 2**31 - 1, 200, dtype=np.int64).astype(np.int32)
    check_ort("DequantizeLinear", [x, np.float32(3.1e-5)], opset=13)
    check_ort("DequantizeLinear", [x, np.float32(3.1e-5), np.int32(0)], opset=13)


def test_int32_input_rejects_nonzero_zero_point():
    x = np.arange(4, dtype=np.int32)
    with pytest.raises(ModelError, match=r"an int32 x must have x_zero_point 0"):
        run_ours("DequantizeLinear", [x, np.float32(0.5), np.int32(1)], {}, 13)


def test_block_quantization_is_unsupported():
    with pytest.raises(UnsupportedError, match=r"block quantization \(block_size=2\)"):
        make_op("DequantizeLinear", {"block_size": 2}, 21)


def test_one_element_scale_with_scalar_zero_point_matches_onnxruntime():
    """onnxruntime's quantizer writes bias scales as [1] with a scalar zero point."""
    x = rng(4).integers(-(2**20), 2**20, 50).astype(np.int32)
    check_ort("DequantizeLinear", [x, np.array([2e-4], np.float32), np.int32(0)], opset=13)
    u = rng(5).integers(0, 256, 50).astype(np.uint8)
    check_ort("DequantizeLinear", [u, np.float32(0.1), np.array([7], np.uint8)], opset=13)


def test_per_axis_zero_point_must_match_its_scale():
    x = np.zeros((2, 3), np.int8)
    with pytest.raises(ModelError, match=r"x_zero_point shape \[\] differs from x_scale shape "
                                         r"\[3\]"):
        run_ours("DequantizeLinear", [x, np.ones(3, np.float32), np.int8(0)], {}, 13)
