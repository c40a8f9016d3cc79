"""Decode an ONNX `TensorProto` into a numpy array.

Handles every typed field (`float_data`, `int32_data`, `int64_data`, `double_data`,
`uint64_data`, `string_data`) and little-endian `raw_data`, with float16 (and bfloat16, widened
to float32) carried as bit patterns in `int32_data`. External data is read by
`mapper.external_data`; this module only decodes bytes and fields. Sizes are checked against a
limit from the declared dims *before* any element is decoded.
"""

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import DataType
from systolic.proto import DataLocation, TensorProto
from systolic.proto.external_data import locate_external_data, read_external_data

__all__ = [
    "LAZY_FROM",
    "declared_bytes",
    "declared_element_bytes",
    "declared_shape",
    "decode_bfloat16",
    "decode_packed_4bit",
    "element_bytes",
    "lazy_loader",
    "placeholder_values",
    "tensor_to_numpy",
]

# Storage size of one element in raw_data; strings have none.
_ELEMENT_BYTES: dict[DataType, int] = {
    DataType.FLOAT: 4,
    DataType.UINT8: 1,
    DataType.INT8: 1,
    DataType.UINT16: 2,
    DataType.INT16: 2,
    DataType.INT32: 4,
    DataType.INT64: 8,
    DataType.BOOL: 1,
    DataType.FLOAT16: 2,
    DataType.DOUBLE: 8,
    DataType.UINT32: 4,
    DataType.UINT64: 8,
    DataType.COMPLEX64: 8,
    DataType.COMPLEX128: 16,
    DataType.BFLOAT16: 2,
}

# Little-endian raw_data layout of each type the IR can hold.
_RAW_DTYPES: dict[DataType, str] = {
    DataType.FLOAT: "<f4",
    DataType.UINT8: "u1",
    DataType.INT8: "i1",
    DataType.UINT16: "<u2",
    DataType.INT16: "<i2",
    DataType.INT32: "<i4",
    DataType.INT64: "<i8",
    DataType.BOOL: "u1",
    DataType.FLOAT16: "<f2",
    DataType.DOUBLE: "<f8",
    DataType.UINT32: "<u4",
    DataType.UINT64: "<u8",
}

# Which typed field holds each element type when raw_data is not used.
_FIELD_OF: dict[DataType, str] = {
    DataType.FLOAT: "float_data",
    DataType.UINT8: "int32_data",
    DataType.INT8: "int32_data",
    DataType.UINT16: "int32_data",
    DataType.INT16: "int32_data",
    DataType.INT32: "int32_data",
    DataType.BOOL: "int32_data",
    DataType.FLOAT16: "int32_data",
    DataType.INT64: "int64_data",
    DataType.DOUBLE: "double_data",
    DataType.UINT32: "uint64_data",
    DataType.UINT64: "uint64_data",
    DataType.STRING: "string_data",
}


def element_bytes(dtype: DataType) -> int:
    """Bytes one element occupies in memory (8 for a string's reference)."""
    if dtype == DataType.STRING:
        return 8
    return _ELEMENT_BYTES.get(dtype, 1)


def declared_shape(proto: TensorProto, where: str) -> tuple[int, ...]:
    """Return the tensor's dims, checking they are non-negative."""
    dims = tuple(int(d) for d in proto.dims)
    if any(d < 0 for d in dims):
        raise ModelError(f"{where} has a negative dimension in {list(dims)}: fix the model")
    return dims


def declared_element_bytes(proto: TensorProto, where: str) -> int:
    """Return the bytes one element of the tensor takes once decoded, from its type."""
    return element_bytes(_data_type(proto, where))


def declared_bytes(proto: TensorProto, where: str) -> int:
    """Return the bytes the tensor takes once decoded, from its dims and type alone."""
    return math.prod(declared_shape(proto, where)) * declared_element_bytes(proto, where)


def tensor_to_numpy(
    proto: TensorProto,
    where: str,
    *,
    base_dir: Path | None,
    max_bytes: int,
    weightless: bool = False,
) -> tuple[DataType, np.ndarray]:
    """Return the element type and values of `proto`, shaped by its dims.

    `where` names the tensor in messages ("initializer 'W'"). Raises ResourceError when the
    declared size exceeds `max_bytes` (before decoding), UnsupportedError for element types the
    tool cannot hold, ModelError when the stored data does not match the dims. A float tensor
    declared with no data at all (a weight-less model) is a ModelError saying so, unless
    `weightless` (flows that only count cycles): then it holds `placeholder_values`.
    """
    dtype = _data_type(proto, where)
    shape = declared_shape(proto, where)
    count = math.prod(shape)
    size = count * element_bytes(dtype)
    if size > max_bytes:
        raise ResourceError(
            f"{where} of shape {list(shape)} needs {size} bytes, more than the limit of "
            f"{max_bytes}: raise the limit (--max-memory) or use a smaller model"
        )
    if proto.HasField("segment"):
        raise UnsupportedError(f"{where} is a segment of a larger tensor: re-export the model")
    if not dtype.has_numpy:
        raise UnsupportedError(
            f"{where} has element type {dtype.name}, which this tool does not support: "
            "convert the model to a supported type"
        )
    if proto.data_location == DataLocation.EXTERNAL:
        if dtype == DataType.STRING:
            raise ModelError(f"{where}: string tensors cannot use external data")
        raw = read_external_data(proto, where, base_dir=base_dir, expected=size)
        return dtype, _from_raw(raw, dtype, shape, where)
    if count and not proto.raw_data and not len(getattr(proto, _FIELD_OF.get(dtype, "dims"))):
        return dtype, _no_data(dtype, shape, where, weightless)
    if proto.HasField("raw_data"):
        if dtype == DataType.STRING:
            raise ModelError(f"{where}: string tensors cannot use raw_data; use string_data")
        return dtype, _from_raw(proto.raw_data, dtype, shape, where)
    return dtype, _from_fields(proto, dtype, shape, where)


LAZY_FROM = 1 << 20
"""Tensors of at least this many bytes may be decoded lazily (`lazy_loader`)."""


def lazy_loader(
    proto: TensorProto, where: str, *, base_dir: Path | None, max_bytes: int
) -> Callable[[], np.ndarray] | None:
    """Return a function that decodes `proto`'s values later (`tensor_to_numpy`'s values),
    after checking now what the header and the stored data's size tell, so that a bad file is
    refused when it is read, as before; or None when the tensor should be decoded now: smaller
    than LAZY_FROM, kept in typed fields or without data, or refused by `tensor_to_numpy`."""
    dtype = _data_type(proto, where)
    shape = declared_shape(proto, where)
    count = math.prod(shape)
    size = count * element_bytes(dtype)
    if (size < LAZY_FROM or size > max_bytes or not dtype.has_numpy
            or dtype not in _RAW_DTYPES or proto.HasField("segment")):
        return None
    if proto.data_location == DataLocation.EXTERNAL:
        locate_external_data(proto, where, base_dir=base_dir, expected=size)
    elif not proto.HasField("raw_data") or (
            len(proto.raw_data) != count * np.dtype(_RAW_DTYPES[dtype]).itemsize):
        return None

    def load() -> np.ndarray:
        return tensor_to_numpy(proto, where, base_dir=base_dir, max_bytes=max_bytes)[1]

    return load


WEIGHTLESS_TYPES = (DataType.FLOAT, DataType.FLOAT16, DataType.DOUBLE)
"""Element types a weight-less tensor may have: weights, biases and normalization
statistics. Integer constants (shapes, axes, zero points) are needed even to count cycles."""


def placeholder_values(dtype: DataType, shape: tuple[int, ...]) -> np.ndarray:
    """Return the values a weight-less tensor holds: 1/4 up to 3/4, a fixed ramp (positive,
    so variances stay valid; never zero, so nothing is folded away as zero)."""
    count = math.prod(shape)
    ramp = 0.25 + 0.5 * (np.arange(count) % 64) / 64
    return ramp.astype(dtype.numpy).reshape(shape)


def _no_data(dtype: DataType, shape: tuple[int, ...], where: str, weightless: bool) -> np.ndarray:
    if weightless and dtype in WEIGHTLESS_TYPES:
        return placeholder_values(dtype, shape)
    if dtype in WEIGHTLESS_TYPES:
        raise ModelError(
            f"{where} of shape {list(shape)} has no data (a weight-less model): running it "
            "needs the weights, as every value is computed and checked; `systolic compare` "
            "gives its cycles without them"
        )
    raise ModelError(f"{where} of shape {list(shape)} has no data: the model is corrupt")


def _data_type(proto: TensorProto, where: str) -> DataType:
    try:
        dtype = DataType(proto.data_type)
    except ValueError:
        raise UnsupportedError(
            f"{where} has element type number {proto.data_type}, which this tool does not know"
        ) from None
    if dtype == DataType.UNDEFINED:
        raise ModelError(f"{where} has no element type (data_type is unset): fix the model")
    return dtype


def _from_raw(raw: bytes, dtype: DataType, shape: tuple[int, ...], where: str) -> np.ndarray:
    layout = np.dtype(_RAW_DTYPES[dtype])
    count = math.prod(shape)
    if len(raw) != count * layout.itemsize:
        raise ModelError(
            f"{where} of shape {list(shape)} and type {dtype.name} needs "
            f"{count * layout.itemsize} bytes of data but has {len(raw)}: the model is corrupt"
        )
    values = np.frombuffer(raw, dtype=layout).astype(dtype.numpy)
    return values.reshape(shape)


def _from_fields(
    proto: TensorProto, dtype: DataType, shape: tuple[int, ...], where: str
) -> np.ndarray:
    field = _FIELD_OF[dtype]
    stored = getattr(proto, field)
    count = math.prod(shape)
    if len(stored) != count:
        raise ModelError(
            f"{where} of shape {list(shape)} needs {count} values but {field} holds "
            f"{len(stored)}: the model is corrupt"
        )
    if dtype == DataType.STRING:
        values = np.empty(count, dtype=object)
        for index, item in enumerate(stored):
            values[index] = _decode_utf8(item, where)
        return values.reshape(shape)
    if dtype == DataType.FLOAT16:
        bits = np.array(stored, dtype=np.int64).astype(np.uint16)
        return bits.view(np.float16).reshape(shape)
    if dtype in (DataType.FLOAT, DataType.DOUBLE, DataType.UINT64, DataType.UINT32):
        raw_values = np.array(list(stored), dtype=dtype.numpy)
    else:
        raw_values = np.array(list(stored), dtype=np.int64)
    if dtype == DataType.BOOL:
        flags: np.ndarray = (raw_values != 0).reshape(shape)
        return flags
    converted: np.ndarray = raw_values.astype(dtype.numpy).reshape(shape)
    return converted


def _decode_utf8(item: bytes, where: str) -> str | bytes:
    try:
        return item.decode("utf-8")
    except UnicodeDecodeError:
        return item


def decode_bfloat16(bits: np.ndarray) -> np.ndarray:
    """Return bfloat16 bit patterns (any integer array) as float32 values (exact)."""
    wide = bits.astype(np.uint32) << np.uint32(16)
    return wide.view(np.float32)


def decode_packed_4bit(packed: bytes, count: int, *, signed: bool) -> np.ndarray:
    """Unpack `count` 4-bit values stored two per byte, low nibble first (ONNX INT4/UINT4)."""
    data = np.frombuffer(packed, dtype=np.uint8)
    if len(data) != (count + 1) // 2:
        raise ModelError(
            f"{count} packed 4-bit values need {(count + 1) // 2} bytes, got {len(data)}"
        )
    nibbles = np.empty(len(data) * 2, dtype=np.uint8)
    nibbles[0::2] = data & 0x0F
    nibbles[1::2] = data >> 4
    values = nibbles[:count]
    if signed:
        return ((values.astype(np.int8) ^ 0x8) - 0x8).astype(np.int8)
    return values
