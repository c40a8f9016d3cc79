"""com.microsoft QLinearAveragePool: average pooling of a quantized tensor, as onnxruntime's
quantizer emits it for AveragePool in QOperator format."""

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from systolic.ir import Attrs
from systolic.reference.kernels import quant
from systolic.reference.kernels.pool import pool_windows, window_counts
from systolic.reference.ops._quantized import check_per_tensor_io, zero_point_value
from systolic.reference.ops._shared import int_attr
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_pool import _Pool

T = TypeVar("T")

MAX_KERNEL_RANK = 3
"""onnxruntime pools over one, two or three spatial axes only."""


class QLinearAveragePool(_Pool):
    """com.microsoft QLinearAveragePool-1, uint8 or int8, NCHW or (channels_last=1) NHWC,
    1 to 3 spatial axes; attributes as AveragePool-10 without dilations (kernel_shape,
    strides, pads, auto_pad, ceil_mode, count_include_pad) plus channels_last.

    Bit for bit what onnxruntime's CPU kernel computes, all in float32:
    each element is dequantized, d = x_scale * float32(x - x_zero_point); a window's sum adds
    the d of the input cells it covers one by one in row-major window order, starting at 0;
    the sum is divided by float32(count), where count is the product of kernel_shape when
    count_include_pad = 1 (even for a ceil-mode window that runs past the end padding) and
    the number of input cells covered otherwise; then
    y = saturate(round_half_to_even(float32(avg / y_scale) + y_zero_point)).
    When the kernel covers the whole unpadded image, onnxruntime switches to its
    global-average-pool arithmetic instead (see QLinearGlobalAveragePool): an exact integer sum
    requantized once with M = float32(x_scale / float32(y_scale * float32(S))), S the image
    size. The pads must be smaller than the kernel, as onnxruntime requires.
    """

    domain = "com.microsoft"
    op_type = "QLinearAveragePool"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if "dilations" in attrs:
            raise self.error("QLinearAveragePool has no 'dilations' attribute; remove it "
                             "(onnxruntime rejects the model)")
        self.channels_last = bool(int_attr(self, "channels_last", 0))
        self.count_pads = bool(int_attr(self, "count_include_pad", 0))
        if len(self.kernel) > MAX_KERNEL_RANK:
            raise self.error(f"kernel_shape has {len(self.kernel)} axes; onnxruntime pools over "
                             f"at most {MAX_KERNEL_RANK} spatial axes")

    def _nchw_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        shape = tuple(shape)
        if len(shape) < 3:
            raise self.error(f"X must have a batch, a channel and at least one spatial axis, "
                             f"got shape {list(shape)}")
        return (shape[0], shape[-1], *shape[1:-1]) if self.channels_last else shape

    def _checked_geometry(self, nchw: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        pads, out = self.geometry(nchw)
        rank = len(self.kernel)
        for i, k in enumerate(self.kernel):
            if pads[i] >= k or pads[rank + i] >= k:
                raise self.error(f"pads {list(pads)} must be smaller than kernel_shape "
                                 f"{list(self.kernel)} (onnxruntime requires it)")
        return pads, out

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, x_scale, x_zp, y_scale, y_zp = _five(inputs)
        assert x is not None and x_scale is not None and y_scale is not None
        check_per_tensor_io(self, x, x_scale, x_zp, y_scale, y_zp, prefixes=("x", "y"))
        nchw = self._nchw_shape(x.shape)
        _, out = self._checked_geometry(nchw)
        if self.channels_last:
            return [TensorInfo(x.dtype, (nchw[0], *out, nchw[1]))]
        return [TensorInfo(x.dtype, (*nchw[:2], *out))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, x_scale, x_zp, y_scale, y_zp = _five(inputs)
        assert x is not None and x_scale is not None and y_scale is not None
        if self.channels_last:
            x = np.moveaxis(x, -1, 1)
        pads, _ = self._checked_geometry(x.shape)
        xs, ys = np.float32(x_scale.reshape(())), np.float32(y_scale.reshape(()))
        xz, yz = zero_point_value(x_zp), zero_point_value(y_zp)
        if tuple(x.shape[2:]) == self.kernel and not any(pads):
            y = _global_average(x, xs, xz, ys, yz)
        else:
            y = self._windowed_average(x, pads, xs, xz, ys, yz)
        if self.channels_last:
            y = np.moveaxis(y, 1, -1)
        return [np.ascontiguousarray(y)]

    def _windowed_average(
        self, x: np.ndarray, pads: tuple[int, ...], xs: np.float32, xz: int, ys: np.float32,
        yz: int,
    ) -> np.ndarray:
        rank = len(self.kernel)
        dequantized = xs * (x.astype(np.int32) - np.int32(xz)).astype(np.float32)
        ones = (1,) * rank
        windows = pool_windows(dequantized, self.kernel, self.strides, pads, ones,
                               ceil_mode=self.ceil_mode, fill=0.0)
        cells = windows.reshape(*windows.shape[: windows.ndim - rank], -1)
        total = np.zeros(cells.shape[:-1], dtype=np.float32)
        for k in range(cells.shape[-1]):  # one float32 addition per cell, in window order
            total = total + cells[..., k]
        counts: np.ndarray
        if self.count_pads:
            counts = np.asarray(np.prod(self.kernel), dtype=np.float32)
        else:
            counts = window_counts(x.shape[2:], self.kernel, self.strides, pads, ones,
                                   ceil_mode=self.ceil_mode, count_pads=False).astype(np.float32)
        average = total / counts
        with np.errstate(over="ignore", invalid="ignore"):
            shifted = (average / ys) + np.float32(yz)
        return quant.saturate(quant.round_half_to_even(shifted), x.dtype)


def _five(inputs: Sequence[T | None]) -> list[T | None]:
    """Return the five inputs, the omitted trailing y_zero_point as None."""
    return [*inputs, *[None] * (5 - len(inputs))]


def _global_average(x: np.ndarray, xs: np.float32, xz: int, ys: np.float32, yz: int) -> np.ndarray:
    """onnxruntime's global-average-pool arithmetic over all spatial axes of NCHW `x`."""
    axes = tuple(range(2, x.ndim))
    size = int(np.prod(x.shape[2:]))
    acc = x.astype(np.int64).sum(axis=axes, keepdims=True) - xz * size
    multiplier = xs / (ys * np.float32(size))
    return quant.requantize(acc, multiplier, yz, x.dtype)


OPS = (QLinearAveragePool,)
