"""TensorProto decoding against onnx.numpy_helper as the oracle, for every field layout."""

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import DataType
from systolic.proto import DataLocation
from systolic.proto import TensorProto as OurTensorProto
from systolic.proto.onnx_tensors import decode_bfloat16, decode_packed_4bit, tensor_to_numpy

DTYPES = [
    "float32",
    "float64",
    "float16",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "bool",
]


def _ours(proto: onnx.TensorProto) -> OurTensorProto:
    ours = OurTensorProto()
    ours.ParseFromString(proto.SerializeToString())
    return ours


def _decode(proto: onnx.TensorProto, max_bytes: int = 1 << 20) -> tuple[DataType, np.ndarray]:
    return tensor_to_numpy(_ours(proto), "tensor 't'", base_dir=None, max_bytes=max_bytes)


def _values(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if dtype == "bool":
        return rng.integers(0, 2, (2, 3)).astype(bool)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal((2, 3)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, (2, 3), dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("raw", [True, False])
def test_decodes_like_numpy_helper(dtype: str, raw: bool) -> None:
    values = _values(dtype)
    if raw:
        proto = numpy_helper.from_array(values, "t")
    else:
        elem = helper.np_dtype_to_tensor_dtype(values.dtype)
        proto = helper.make_tensor("t", elem, values.shape, values.reshape(-1).tolist())
    assert proto.HasField("raw_data") == raw
    dtype_out, data = _decode(proto)
    expected = numpy_helper.to_array(proto)
    assert dtype_out == DataType(proto.data_type)
    assert data.dtype == expected.dtype and data.shape == expected.shape
    np.testing.assert_array_equal(data, expected)


def test_scalar_and_empty_tensors() -> None:
    _, scalar = _decode(numpy_helper.from_array(np.array(3.5, dtype=np.float32), "t"))
    assert scalar.shape == () and scalar == np.float32(3.5)
    _, empty = _decode(numpy_helper.from_array(np.zeros((0, 4), dtype=np.int64), "t"))
    assert empty.shape == (0, 4)


def test_strings() -> None:
    proto = helper.make_tensor("t", TensorProto.STRING, [2], [b"ab", "\u00e9".encode()])
    dtype, data = _decode(proto)
    assert dtype == DataType.STRING and data.tolist() == ["ab", "\u00e9"]


def test_wrong_number_of_values_is_a_model_error() -> None:
    proto = helper.make_tensor("t", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    proto.dims[:] = [2, 2]
    with pytest.raises(
        ModelError, match=r"^tensor 't' of shape \[2, 2\] needs 4 values but float_data holds 3"
    ):
        _decode(proto)


def test_size_limit_is_checked_before_decoding() -> None:
    proto = helper.make_tensor("t", TensorProto.FLOAT, [0], [])
    proto.dims[:] = [1000, 1000, 1000]
    with pytest.raises(
        ResourceError,
        match=r"^tensor 't' of shape \[1000, 1000, 1000\] needs 4000000000 bytes, more than the limit of 1024",
    ):
        _decode(proto, max_bytes=1024)


def test_types_without_numpy_are_unsupported() -> None:
    proto = helper.make_tensor("t", TensorProto.BFLOAT16, [1], [1.0])
    with pytest.raises(UnsupportedError, match=r"element type BFLOAT16"):
        _decode(proto)


def test_bfloat16_bits_widen_exactly() -> None:
    values = np.array([1.0, -2.5, 3.140625, 0.0], dtype=np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(decode_bfloat16(bits), values)


def test_packed_4bit_matches_onnx_packing() -> None:
    signed = np.array([-8, 7, -1, 0, 3], dtype=np.int8)
    packed = helper.make_tensor("t", TensorProto.INT4, [5], signed.tolist())
    np.testing.assert_array_equal(
        decode_packed_4bit(packed.raw_data or bytes(packed.int32_data), 5, signed=True), signed
    )
    unsigned = np.array([15, 0, 9], dtype=np.uint8)
    packed = helper.make_tensor("t", TensorProto.UINT4, [3], unsigned.tolist())
    np.testing.assert_array_equal(
        decode_packed_4bit(packed.raw_data or bytes(packed.int32_data), 3, signed=False), unsigned
    )


# -- lazy_loader ---------------------------------------------------------------------------


def test_lazy_loader_decodes_large_raw_tensors_later_to_the_same_values() -> None:
    from systolic.proto.onnx_tensors import LAZY_FROM, lazy_loader

    values = np.arange(LAZY_FROM // 4, dtype=np.float32).reshape(4, -1)
    proto = _ours(numpy_helper.from_array(values, "t"))
    load = lazy_loader(proto, "tensor 't'", base_dir=None, max_bytes=1 << 30)
    assert load is not None
    np.testing.assert_array_equal(load(), values)


def test_lazy_loader_leaves_small_corrupt_and_refused_tensors_to_decode_now() -> None:
    from systolic.proto.onnx_tensors import LAZY_FROM, lazy_loader

    small = _ours(numpy_helper.from_array(np.zeros(4, np.float32), "t"))
    assert lazy_loader(small, "t", base_dir=None, max_bytes=1 << 30) is None
    large = numpy_helper.from_array(np.zeros(LAZY_FROM // 4, np.float32), "t")
    assert lazy_loader(_ours(large), "t", base_dir=None, max_bytes=LAZY_FROM - 1) is None
    large.raw_data = large.raw_data[:-4]  # corrupt: tensor_to_numpy refuses it at once
    assert lazy_loader(_ours(large), "t", base_dir=None, max_bytes=1 << 30) is None


def test_lazy_loader_checks_external_data_before_it_is_read(tmp_path: Path) -> None:
    from systolic.proto.onnx_tensors import LAZY_FROM, lazy_loader

    proto = OurTensorProto()
    proto.name, proto.data_type = "t", int(DataType.FLOAT)
    proto.dims.append(LAZY_FROM // 4)
    proto.data_location = DataLocation.EXTERNAL
    entry = proto.external_data.add()
    entry.key, entry.value = "location", "t.bin"
    with pytest.raises(ModelError, match=r"external data file 't.bin' is missing"):
        lazy_loader(proto, "tensor 't'", base_dir=tmp_path, max_bytes=1 << 30)
    (tmp_path / "t.bin").write_bytes(b"\0" * 8)
    with pytest.raises(ModelError, match=r"is too short: needs 1048576 bytes at offset 0"):
        lazy_loader(proto, "tensor 't'", base_dir=tmp_path, max_bytes=1 << 30)
    (tmp_path / "t.bin").write_bytes(np.ones(LAZY_FROM // 4, np.float32).tobytes())
    load = lazy_loader(proto, "tensor 't'", base_dir=tmp_path, max_bytes=1 << 30)
    assert load is not None
    np.testing.assert_array_equal(load(), np.ones(LAZY_FROM // 4, np.float32))
