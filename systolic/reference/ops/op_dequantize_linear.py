"""DequantizeLinear: y = (x - x_zero_point) * x_scale."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import (
    check_quantized,
    check_scale_type,
    check_zero_point_shape,
)
from systolic.reference.ops._shared import int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo

_INPUT_TYPES = {
    10: frozenset({DataType.UINT8, DataType.INT8, DataType.INT32}),
    21: frozenset({DataType.UINT8, DataType.INT8, DataType.INT32, DataType.UINT16,
                   DataType.INT16}),
}


class DequantizeLinear(Op):
    """DequantizeLinear-10, -13, -19, -21, -23.

    y = float32(x - x_zero_point) * x_scale: the difference is exact in int32, its conversion
    to float32 exact for 8- and 16-bit inputs (rounding to nearest even beyond 2**24 for
    int32), and the product one float32 multiplication, as onnxruntime computes it. Per tensor,
    or per axis (from version 13, `axis` default 1). An int32 x must have a zero point of 0
    (or none). uint16/int16 inputs exist from version 21. Unsupported: float8/4-bit inputs,
    block quantization, float16/bfloat16 scales and outputs.
    """

    op_type = "DequantizeLinear"
    since_versions = (10, 13, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", 1) if version >= 13 else None
        block_size = int_attr(self, "block_size", 0) if version >= 21 else 0
        if block_size != 0:
            raise UnsupportedError(f"node {node_label!r} (DequantizeLinear): block "
                                   f"quantization (block_size={block_size}) is not supported; "
                                   "dequantize per tensor or per axis")
        output_dtype = int_attr(self, "output_dtype", 0) if version >= 23 else 0
        if output_dtype not in (0, DataType.FLOAT):
            raise UnsupportedError(f"node {node_label!r} (DequantizeLinear): output_dtype "
                                   f"{output_dtype} is not supported; only float32 is")

    def _axis(self, x_rank: int, scale_shape: tuple[int, ...]) -> int | None:
        if scale_shape in ((), (1,)):
            return None
        if self.axis is None or len(scale_shape) != 1:
            raise self.error(f"x_scale must be a scalar{' or 1-D' if self.axis is not None else ''}"
                             f", got shape {list(scale_shape)}")
        return normalize_axis(self, self.axis, x_rank)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, scale, *rest = inputs
        zero_point = rest[0] if rest else None
        assert x is not None and scale is not None
        check_quantized(self, x, "x", _INPUT_TYPES[21 if self.version >= 21 else 10])
        check_scale_type(self, scale, "x_scale")
        axis = self._axis(len(x.shape), scale.shape)
        if axis is not None and scale.shape[0] != x.shape[axis]:
            raise self.error(f"per-axis x_scale has {scale.shape[0]} elements but x has "
                             f"{x.shape[axis]} along axis {axis}")
        if zero_point is not None:
            if zero_point.dtype != x.dtype:
                raise self.error(f"x_zero_point has type {zero_point.dtype.short}, x has "
                                 f"{x.dtype.short}; they must match")
            check_zero_point_shape(self, zero_point, scale, "x")
            self._check_int32_zero_point(x.dtype, zero_point.value)
        return [TensorInfo(DataType.FLOAT, x.shape)]

    def _check_int32_zero_point(self, dtype: DataType, value: np.ndarray | None) -> None:
        if dtype == DataType.INT32 and value is not None and np.any(value != 0):
            raise self.error("an int32 x must have x_zero_point 0 (ONNX); fold the offset "
                             "into the values")

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, scale, *rest = inputs
        zero_point = rest[0] if rest else None
        assert x is not None and scale is not None
        if zero_point is not None:
            self._check_int32_zero_point(DataType.from_numpy(x.dtype), zero_point)
        axis = self._axis(x.ndim, scale.shape)
        return [quant.dequantize(x, scale, zero_point, axis=axis)]


OPS = (DequantizeLinear,)
