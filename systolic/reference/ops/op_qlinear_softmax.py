"""com.microsoft QLinearSoftmax: softmax of a quantized tensor through a table of exponentials,
as onnxruntime computes it (the QOperator form of Softmax)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._quantized import check_per_tensor_io
from systolic.reference.ops._shared import int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo

_FLOAT32_MAX = np.float32(np.finfo(np.float32).max)
_RESERVED_BITS = 5.0
"""onnxruntime keeps the sum of the table values e**5 below the float32 maximum."""


def exp_table(x_scale: np.float32, reduce_len: int) -> np.ndarray:
    """Return onnxruntime's 256 float32 exponentials for a row of `reduce_len` elements.

    Entry i holds exp((i - 255 + shift) * x_scale) computed in float64 and rounded to float32,
    with shift = max(0, ln(float32(FLT_MAX / reduce_len)) - 5) / x_scale, so that a row whose
    maximum sits at index 255 sums to less than FLT_MAX. An input q of a row with maximum m
    reads entry q - m + 255.
    """
    headroom = np.float64(np.float32(_FLOAT32_MAX / np.float32(reduce_len)))
    shift = max(0.0, float(np.log(headroom)) - _RESERVED_BITS) / float(x_scale)
    steps = np.arange(256, dtype=np.float64) - 255.0 + shift
    return np.exp(steps * float(x_scale)).astype(np.float32)


def _float_to_int(x: np.ndarray, bits: int) -> np.ndarray:
    """Truncate float32 `x` to a `bits`-bit x86-64 integer (int64 holds the result): a value
    out of range, inf or NaN gives -2**(bits - 1), as cvttss2si does."""
    fits = np.isfinite(x) & (np.abs(x) < 2.0 ** (bits - 1))
    return np.where(fits, np.where(fits, x, 0).astype(np.int64), np.int64(-(2 ** (bits - 1))))


class QLinearSoftmax(Op):
    """com.microsoft QLinearSoftmax-1, uint8 or int8, bit-exact with onnxruntime's CPU kernel.

    Attribute `opset` (required) is the Softmax version the node replaces: below 13 each row is
    the input flattened from `axis` on (axis defaults to 1), from 13 the single axis `axis`
    (default -1). Per row, with m its maximum and T = `exp_table(X_scale, row length)`:
    e = T[x - m + 255], s = the float32 sum of e in row order,
    y = saturate(int(round_half_to_even(float32(e * floor(1 / Y_scale)) / s)) + Y_zp), where
    the float-to-integer conversion is x86-64's (uint8 through int64 to uint32 with uint32
    addition, int8 through int32), so a ratio that overflows float32 (a one-element row with
    floor(1 / Y_scale) > 148) gives Y_zp for uint8 and -128 for int8, as onnxruntime does. X_zero_point does not matter (softmax is shift-invariant).
    """

    domain = "com.microsoft"
    op_type = "QLinearSoftmax"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if "opset" not in attrs:
            raise self.error("required attribute 'opset' (the Softmax version it replaces) is "
                             "missing; set opset=13 for single-axis softmax")
        self.opset = int_attr(self, "opset", 13)
        self.axis = int_attr(self, "axis", -1)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        padded = list(inputs) + [None] * (5 - len(inputs))
        x, x_scale, x_zp, y_scale, y_zp = padded
        if x is None or x_scale is None or y_scale is None or y_zp is None:
            raise self.error("inputs X, X_scale, Y_scale and Y_zero_point are required (only "
                             "X_zero_point may be omitted)")
        check_per_tensor_io(self, x, x_scale, x_zp, y_scale, y_zp)
        if len(x.shape) == 0:
            raise self.error("X must have at least one dimension")
        normalize_axis(self, self.axis, len(x.shape))
        return [TensorInfo(x.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (5 - len(inputs))
        x, x_scale, _x_zp, y_scale, y_zp = padded
        assert x is not None and x_scale is not None and y_scale is not None
        if x.size == 0:
            return [x.copy()]
        axis = normalize_axis(self, self.axis, x.ndim)
        if self.opset < 13:
            rows = x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
        else:
            rows = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
        table = exp_table(np.float32(x_scale.reshape(-1)[0]), rows.shape[1])
        wide = rows.astype(np.int32)
        e = table[wide - wide.max(axis=1, keepdims=True) + 255]
        total = np.cumsum(e, axis=1, dtype=np.float32)[:, -1:]
        out_scale = np.floor(np.float32(1.0) / np.float32(y_scale.reshape(-1)[0]))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ratio = (e * out_scale) / total
        assert y_zp is not None
        zero = int(y_zp.reshape(-1)[0])
        rounded = np.rint(ratio)
        if x.dtype == np.uint8:  # uint32 conversion goes through int64; uint32 addition
            q = (_float_to_int(rounded, 64) + zero) & 0xFFFFFFFF
            y = np.minimum(q, 255).astype(np.uint8)
        else:  # int32 conversion and addition, then saturation
            q = (_float_to_int(rounded, 32) + zero + 2**31) % 2**32 - 2**31
            y = np.clip(q, -128, 127).astype(np.int8)
        if self.opset < 13:
            return [y.reshape(x.shape)]
        moved = np.moveaxis(x, axis, -1).shape
        return [np.moveaxis(y.reshape(moved), -1, axis).copy()]


OPS = (QLinearSoftmax,)
