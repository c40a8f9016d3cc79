import numpy as np
import onnx.defs
import pytest

from systolic.errors import UnsupportedError
from systolic.reference import registry

from ..oracle import make_op, rng
from ..ort_oracle import check_ort

SCALES = [1e-4, 3.7e-3, 0.05, 1.0, 10.0]
ZERO_POINTS = {np.uint8: [0, 128, 255], np.int8: [-128, 0, 127],
               np.uint16: [0, 40000, 65535], np.int16: [-32768, 5, 32767]}


def data(shape, scale, seed):
    """Random values spanning well past the output range, with exact .5 ties mixed in."""
    r = rng(seed)
    x = (r.standard_normal(shape) * 150 * scale).astype(np.float32)
    flat = x.reshape(-1)
    ties = r.integers(-300, 300, flat.size // 4) + 0.5
    flat[: ties.size] = (ties * np.float64(scale)).astype(np.float32)
    return x


def test_since_versions_follow_onnx_schema_history():
    history = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                      if s.name == "QuantizeLinear" and s.domain == ""})
    low, high = registry.SUPPORTED_OPSETS[""]
    assert registry.versions_of("", "QuantizeLinear") == [v for v in history if low <= v <= high]


@pytest.mark.parametrize("opset", [10, 13, 21, 23])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("scale", SCALES)
def test_per_tensor_matches_onnxruntime(opset, dtype, scale):
    for i, zp in enumerate(ZERO_POINTS[dtype]):
        x = data((3, 5, 67), scale, seed=i)
        check_ort("QuantizeLinear", [x, np.float32(scale), np.array(zp, dtype)], opset=opset)


@pytest.mark.parametrize("dtype", [np.uint16, np.int16])
def test_16_bit_outputs_match_onnxruntime(dtype):
    for i, zp in enumerate(ZERO_POINTS[dtype]):
        x = data((4, 300), 1e-3, seed=i) * 200
        check_ort("QuantizeLinear", [x, np.float32(1e-3), np.array(zp, dtype)], opset=21)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_per_axis_matches_onnxruntime(axis, dtype):
    x = data((4, 6, 5), 0.02, seed=3)
    n = x.shape[axis]
    r = rng(4)
    scale = (10 ** r.uniform(-4, 1, n)).astype(np.float32)
    x = x * np.float32(50) * scale.reshape([-1 if a == axis % 3 else 1 for a in range(3)])
    info = np.iinfo(dtype)
    zp = r.integers(info.min, info.max + 1, n).astype(dtype)
    check_ort("QuantizeLinear", [x.astype(np.float32), scale, zp], {"axis": axis}, opset=13)


def test_default_output_is_uint8_without_zero_point():
    x = data((2, 50), 0.1, seed=5)
    out = check_ort("QuantizeLinear", [x, np.float32(0.1)], opset=13)
    assert out.dtype == np.uint8


def test_output_dtype_attribute_without_zero_point():
    x = data((2, 50), 0.1, seed=6)
    out = check_ort("QuantizeLinear", [x, np.float32(0.1)], {"output_dtype": 3}, opset=21)
    assert out.dtype == np.int8


def test_infinities_saturate():
    x = np.array([np.inf, -np.inf, 1e30, -1e30], dtype=np.float32)
    check_ort("QuantizeLinear", [x, np.float32(0.5), np.uint8(3)], opset=13)


def test_block_quantization_is_unsupported():
    with pytest.raises(UnsupportedError, match=r"block quantization \(block_size=4\)"):
        make_op("QuantizeLinear", {"block_size": 4}, 21)


def test_float8_output_is_unsupported():
    from systolic.ir import DataType
    from systolic.reference.ops.base import TensorInfo
    op = make_op("QuantizeLinear", {}, 21)
    infos = [TensorInfo(DataType.FLOAT, (3,)), TensorInfo(DataType.FLOAT, ()),
             TensorInfo(DataType.FLOAT8E4M3FN, ())]
    with pytest.raises(UnsupportedError, match=r"output type float8e4m3fn is not supported"):
        op.infer(infos)


def test_one_element_scale_with_scalar_zero_point_matches_onnxruntime():
    x = rng(6).standard_normal(50).astype(np.float32)
    check_ort("QuantizeLinear", [x, np.array([0.02], np.float32), np.uint8(128)], opset=13)
