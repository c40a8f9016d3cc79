"""com.microsoft QLinearLeakyRelu and QLinearSigmoid: element-wise functions of a quantized
input, computed on the dequantized value and quantized again (onnxruntime tabulates them)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.kernels import quant
from systolic.reference.ops._quantized import check_per_tensor_io
from systolic.reference.ops._shared import float_attr
from systolic.reference.ops.base import Op, TensorInfo


class _QLinearLookup(Op):
    """y = quantize(f(dequantize(x))) with per-tensor scales and optional zero points (0)."""

    domain = "com.microsoft"
    since_versions = (1,)

    def function(self, real: np.ndarray) -> np.ndarray:
        """Return f of the float32 dequantized input, as float32."""
        raise NotImplementedError

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        padded = list(inputs) + [None] * (5 - len(inputs))
        x, x_scale, x_zp, y_scale, y_zp = padded
        assert x is not None and x_scale is not None and y_scale is not None
        check_per_tensor_io(self, x, x_scale, x_zp, y_scale, y_zp)
        return [TensorInfo(x.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        padded = list(inputs) + [None] * (5 - len(inputs))
        x, x_scale, x_zp, y_scale, y_zp = padded
        assert x is not None and x_scale is not None and y_scale is not None
        real = quant.dequantize(x, x_scale, x_zp, axis=None)
        zero = np.zeros((), x.dtype) if y_zp is None else y_zp
        return [quant.quantize(self.function(real), y_scale, zero, axis=None, dtype=x.dtype)]


class QLinearLeakyRelu(_QLinearLookup):
    """com.microsoft QLinearLeakyRelu-1 (alpha default 0.01), uint8 or int8.

    r = float32(x - X_zp) * X_scale; f = r if r >= 0 else float32(alpha) * r (float32);
    y = saturate(round_half_to_even(f / Y_scale) + Y_zp): onnxruntime's table, bit for bit.
    """

    op_type = "QLinearLeakyRelu"

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.alpha = np.float32(float_attr(self, "alpha", 0.01))

    def function(self, real: np.ndarray) -> np.ndarray:
        return np.where(real >= 0, real, self.alpha * real).astype(np.float32)


class QLinearSigmoid(_QLinearLookup):
    """com.microsoft QLinearSigmoid-1, uint8 or int8.

    f = 1 / (1 + exp(-r)) on the dequantized r, computed in float64 and rounded to float32,
    then quantized as QuantizeLinear does. onnxruntime evaluates the sigmoid with a polynomial
    approximation (MlasComputeLogistic) whose float32 result can sit a few ulps from the true
    value, so an output that lies within that of a rounding boundary may differ by 1.
    """

    op_type = "QLinearSigmoid"

    def function(self, real: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # exp overflows to inf for very negative r: f = 0
            return (1.0 / (1.0 + np.exp(-real.astype(np.float64)))).astype(np.float32)


OPS = (QLinearLeakyRelu, QLinearSigmoid)
