"""DynamicQuantizeLinear: quantize a float32 tensor to uint8 with a scale and zero point
computed from its own range (onnxruntime's `quantize_dynamic` puts one before each
MatMulInteger)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import DataType
from systolic.reference.ops._shared import check_type
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["OPS", "DynamicQuantizeLinear"]


class DynamicQuantizeLinear(Op):
    """DynamicQuantizeLinear-11, in float32 as the operator documentation writes it::

        lo, hi = min(0, min(x)), max(0, max(x))
        y_scale = (hi - lo) / 255                     (1 when hi == lo, as onnxruntime)
        y_zero_point = round_half_to_even(clamp(0 - lo / y_scale, 0, 255))
        y = saturate(round_half_to_even(x / y_scale) + y_zero_point)    uint8

    Outputs y (x's shape), y_scale (float32 scalar) and y_zero_point (uint8 scalar). x must
    not be empty (it has no range). For an all-zero x (the documentation divides 0 by 0)
    onnxruntime's scale 1 is taken; onnx's ReferenceEvaluator gives 1/255 there (y and the
    zero point are 0 either way)."""

    op_type = "DynamicQuantizeLinear"
    since_versions = (11,)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, frozenset({DataType.FLOAT}), "x")
        if x.size == 0:
            raise self.error("x is empty: a dynamic quantization needs at least one value")
        return [TensorInfo(DataType.UINT8, x.shape), TensorInfo(DataType.FLOAT, ()),
                TensorInfo(DataType.UINT8, ())]  # fmt: skip

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        if x.size == 0:
            raise self.error("x is empty: a dynamic quantization needs at least one value")
        if not np.all(np.isfinite(x)):
            raise self.error("x holds NaN or infinite values: its range, and so the scale, is "
                             "undefined")  # fmt: skip
        hi = np.float32(max(np.float32(0), np.max(x)))
        lo = np.float32(min(np.float32(0), np.min(x)))
        scale = np.float32(1.0) if hi == lo else np.float32(np.float32(hi - lo) / np.float32(255))
        zero_point = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
        y = np.clip(np.rint(x.astype(np.float32) / scale) + zero_point, 0, 255)
        return [y.astype(np.uint8), np.array(scale, np.float32),
                np.array(zero_point, np.uint8)]  # fmt: skip


OPS = (DynamicQuantizeLinear,)
