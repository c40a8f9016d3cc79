"""Helpers shared by the quantized operators: checking scale and zero-point inputs, reading
them, and the exact integer matrix product."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import DataType
from systolic.reference.ops.base import Op, TensorInfo

__all__ = [
    "EIGHT_BIT",
    "broadcast_matmul_shape",
    "check_per_tensor",
    "check_per_tensor_io",
    "check_quantized",
    "check_scale_type",
    "check_vector_or_scalar",
    "int_matmul",
    "scalar_value",
    "zero_point_value",
]

EIGHT_BIT = frozenset({DataType.UINT8, DataType.INT8})
"""The element types of the QLinear* and *Integer operators' quantized tensors."""

_FLOAT64_EXACT = 2**53


def check_quantized(
    op: Op, info: TensorInfo, what: str, allowed: frozenset[DataType] = EIGHT_BIT
) -> None:
    """Raise ModelError (or UnsupportedError for float8 and 4-bit types) unless `info` has an
    element type in `allowed`."""
    if info.dtype in allowed:
        return
    names = ", ".join(sorted(t.short for t in allowed))
    if info.dtype.name.startswith(("FLOAT8", "FLOAT4")) or info.dtype in (
        DataType.INT4, DataType.UINT4
    ):
        raise UnsupportedError(
            f"node {op.node_label!r} ({op.op_type}): {what} has element type "
            f"{info.dtype.name.lower()}, which the reference does not support; quantize to one "
            f"of {names} instead"
        )
    raise op.error(f"{what} has element type {info.dtype.short}; expected one of {names}")


def check_scale_type(op: Op, info: TensorInfo, what: str) -> None:
    """Require a float32 scale (float16 and bfloat16 scales are valid ONNX but unsupported)."""
    if info.dtype == DataType.FLOAT:
        return
    if info.dtype in (DataType.FLOAT16, DataType.BFLOAT16):
        raise UnsupportedError(
            f"node {op.node_label!r} ({op.op_type}): {what} is {info.dtype.name.lower()}; "
            "the reference computes quantization with float32 scales only, convert it to float"
        )
    raise op.error(f"{what} has element type {info.dtype.short}; expected f32")


def check_per_tensor(op: Op, info: TensorInfo | None, what: str) -> None:
    """Require a scalar or one-element 1-D tensor (a per-tensor scale or zero point)."""
    if info is not None and not (info.shape == () or info.shape == (1,)):
        raise op.error(f"{what} must be a scalar or a 1-element 1-D tensor, got shape "
                       f"{list(info.shape)}")


def check_zero_point_shape(
    op: Op, zero_point: TensorInfo, scale: TensorInfo, prefix: str
) -> None:
    """Require a zero point shaped as its scale; a scalar and a 1-element 1-D tensor are the
    same per-tensor value (onnxruntime's quantizer writes bias scales as [1] with scalar zero
    points, and onnxruntime accepts them)."""
    per_tensor = ((), (1,))
    if zero_point.shape == scale.shape or (zero_point.shape in per_tensor
                                           and scale.shape in per_tensor):
        return
    raise op.error(f"{prefix}_zero_point shape {list(zero_point.shape)} differs from "
                   f"{prefix}_scale shape {list(scale.shape)}")


def check_per_tensor_io(op: Op, x: TensorInfo, x_scale: TensorInfo, x_zp: TensorInfo | None,
                        y_scale: TensorInfo, y_zp: TensorInfo | None, *,
                        prefixes: tuple[str, str] = ("X", "Y")) -> None:
    """Check the X, X_scale, X_zero_point, Y_scale, Y_zero_point inputs of an elementwise
    QLinear operator: X 8-bit, per-tensor float scales, per-tensor zero points of X's type.
    Messages name the scales and zero points with `prefixes` (the schema's "x"/"y" for the
    pooling operators)."""
    check_quantized(op, x, "X")
    x_name, y_name = prefixes
    for info, name in ((x_scale, f"{x_name}_scale"), (y_scale, f"{y_name}_scale")):
        check_scale_type(op, info, name)
        check_per_tensor(op, info, name)
    for zp, name in ((x_zp, f"{x_name}_zero_point"), (y_zp, f"{y_name}_zero_point")):
        check_per_tensor(op, zp, name)
        if zp is not None and zp.dtype != x.dtype:
            raise op.error(f"{name} has type {zp.dtype.short}; expected {x.dtype.short}")


def check_vector_or_scalar(op: Op, info: TensorInfo | None, length: int, what: str) -> None:
    """Require a per-tensor value or a 1-D tensor of `length` elements."""
    if info is None or info.shape in ((), (1,), (length,)):
        return
    raise op.error(f"{what} must be a scalar or a 1-D tensor of {length} elements, got shape "
                   f"{list(info.shape)}")


def scalar_value(x: np.ndarray) -> np.ndarray:
    """Return the single element of a per-tensor scale or zero point as a 0-d array."""
    return np.asarray(x).reshape(())


def zero_point_value(x: np.ndarray | None) -> int:
    """Return a per-tensor zero point as a Python int (0 when the input is omitted)."""
    return 0 if x is None else int(np.asarray(x).reshape(()))


def int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the numpy-style matmul of integer arrays as int32, the exact sum wrapped to 32
    bits as an int32 accumulator holds it.

    Computed in float64 when that is provably exact (every partial sum below 2**53 in
    magnitude), which is much faster than numpy's integer matmul, else in int64.
    """
    a64, b64 = a.astype(np.int64, copy=False), b.astype(np.int64, copy=False)
    terms = a.shape[-1] if a.ndim else 1
    bound = (int(np.abs(a64).max(initial=0)) * int(np.abs(b64).max(initial=0)) * terms)
    if bound <= _FLOAT64_EXACT:
        exact = np.matmul(a64.astype(np.float64), b64.astype(np.float64)).astype(np.int64)
    else:
        exact = np.matmul(a64, b64)
    return np.asarray(exact.astype(np.int32))


def broadcast_matmul_shape(op: Op, a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """Return numpy's matmul output shape for operands of shapes `a` and `b`, or raise."""
    if len(a) == 0 or len(b) == 0:
        raise op.error("matrix product operands must have at least one dimension")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise op.error(f"inner dimensions differ: A is {list(a)}, B is {list(b)}")
    try:
        batch = tuple(int(d) for d in np.broadcast_shapes(a2[:-2], b2[:-2]))
    except ValueError:
        raise op.error(f"batch dimensions of A {list(a)} and B {list(b)} do not broadcast") \
            from None
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out
