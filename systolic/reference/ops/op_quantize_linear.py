"""QuantizeLinear: y = saturate(round_half_to_even(x / y_scale) + y_zero_point)."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import check_scale_type, check_zero_point_shape
from systolic.reference.ops._shared import int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo

_OUTPUT_TYPES = frozenset({DataType.UINT8, DataType.INT8, DataType.UINT16, DataType.INT16})
_INPUT_TYPES = frozenset({DataType.FLOAT, DataType.FLOAT16, DataType.INT32})


class QuantizeLinear(Op):
    """QuantizeLinear-10, -13, -19, -21, -23.

    y = saturate(round_half_to_even(x / y_scale) + y_zero_point), per tensor, or per axis
    (from version 13, `axis` default 1) with a 1-D scale and zero point of x.shape[axis]
    elements. The division is one float32 division (x converted to float32: exact for float16,
    and for int32 up to 2**24), rounding is half to even, saturation clamps to the output type.
    This matches onnxruntime bit for bit (checked against it: a float64 division or a
    multiplication by the reciprocal would not).

    The output type is y_zero_point's, else the `output_dtype` attribute (version 21), else
    uint8. uint16 and int16 outputs exist from version 21. Unsupported, with a clear error:
    float8/float4/int4/uint4 outputs, block quantization (block_size > 0), float16/bfloat16
    scales and a `precision` other than float32. `saturate` only concerns float8 and is
    accepted and ignored.
    """

    op_type = "QuantizeLinear"
    since_versions = (10, 13, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", 1) if version >= 13 else None
        block_size = int_attr(self, "block_size", 0) if version >= 21 else 0
        if block_size < 0:
            raise self.error(f"block_size must not be negative, got {block_size}")
        if block_size != 0:
            raise UnsupportedError(f"node {node_label!r} (QuantizeLinear): block quantization "
                                   f"(block_size={block_size}) is not supported; quantize per "
                                   "tensor or per axis")
        self.output_dtype = int_attr(self, "output_dtype", 0) if version >= 21 else 0
        precision = int_attr(self, "precision", 0) if version >= 23 else 0
        if precision not in (0, DataType.FLOAT):
            raise UnsupportedError(f"node {node_label!r} (QuantizeLinear): precision "
                                   f"{precision} is not supported; only float32 division is")

    def _output_type(self, zero_point: TensorInfo | None) -> DataType:
        if zero_point is not None:
            out = zero_point.dtype
            if self.output_dtype not in (0, out):
                raise self.error(f"output_dtype {self.output_dtype} disagrees with "
                                 f"y_zero_point's type {out.short}")
        elif self.output_dtype:
            try:
                out = DataType(self.output_dtype)
            except ValueError:
                raise self.error(f"output_dtype {self.output_dtype} is not a type") from None
        else:
            out = DataType.UINT8
        allowed = _OUTPUT_TYPES if self.version >= 21 else frozenset(
            {DataType.UINT8, DataType.INT8})
        if out not in allowed:
            if out.name.startswith(("FLOAT8", "FLOAT4")) or out in (DataType.INT4,
                                                                    DataType.UINT4):
                raise UnsupportedError(
                    f"node {self.node_label!r} (QuantizeLinear): output type "
                    f"{out.name.lower()} is not supported; use uint8, int8, uint16 or int16")
            raise self.error(f"output type {out.short} is not allowed at this version")
        return out

    def _axis(self, x_rank: int, scale: TensorInfo) -> int | None:
        """Return the normalized axis for a per-axis scale, None for a per-tensor one."""
        if scale.shape in ((), (1,)):
            return None
        if self.axis is None or len(scale.shape) != 1:
            raise self.error(f"y_scale must be a scalar{' or 1-D' if self.axis is not None else ''}"
                             f", got shape {list(scale.shape)}")
        return normalize_axis(self, self.axis, x_rank)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, scale, *rest = inputs
        zero_point = rest[0] if rest else None
        assert x is not None and scale is not None
        if x.dtype not in _INPUT_TYPES:
            raise self.error(f"x has element type {x.dtype.short}; expected f32, f16 or i32")
        check_scale_type(self, scale, "y_scale")
        out = self._output_type(zero_point)
        axis = self._axis(len(x.shape), scale)
        if axis is not None and scale.shape[0] != x.shape[axis]:
            raise self.error(f"per-axis y_scale has {scale.shape[0]} elements but x has "
                             f"{x.shape[axis]} along axis {axis}")
        if zero_point is not None:
            check_zero_point_shape(self, zero_point, scale, "y")
        return [TensorInfo(out, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, scale, *rest = inputs
        zero_point = rest[0] if rest else None
        assert x is not None and scale is not None
        out = self._output_type(
            None if zero_point is None
            else TensorInfo(DataType.from_numpy(zero_point.dtype), zero_point.shape)
        )
        axis = self._axis(x.ndim, TensorInfo(DataType.FLOAT, scale.shape))
        return [quant.quantize(x, scale, zero_point, axis=axis, dtype=out.numpy)]


OPS = (QuantizeLinear,)
