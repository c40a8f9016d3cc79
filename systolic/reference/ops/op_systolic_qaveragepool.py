"""systolic.QAveragePool: average pooling of a quantized tensor as the accelerator's POOL
instruction computes it: an exact integer window sum, requantized once."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs
from systolic.isa.requant import quantize_multiplier
from systolic.reference.kernels.pool import pool_windows, window_counts
from systolic.reference.ops._shared import float_attr, int_attr
from systolic.reference.ops._systolic import (
    OutputStage,
    PoolWindowOp,
    check_eight_bit,
    output_stage,
    type_range,
)
from systolic.reference.ops.base import TensorInfo


class QAveragePool(PoolWindowOp):
    """systolic.QAveragePool-1: Y = QAveragePool(X), X uint8/int8 [N, C, *spatial].

    Attributes: kernel_shape, strides (default 1), pads (begins then ends, default 0),
    count_include_pad (default 0), x_zero_point (in X's type), y_zero_point, scale (float:
    x_scale / y_scale), y_type, y_lo, y_hi. Global average pooling is kernel = spatial shape.

    Per output: count = the window's cells (padding included when count_include_pad, else
    the input cells it covers); (M, s) = quantize_multiplier(float32(scale) / count) (float64
    division of the attribute's float32 value); y = clamp(round_half_to_even(sum of
    (x - x_zero_point) over the input cells * M / 2**(31 + s)) + y_zero_point, y_lo, y_hi).
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QAveragePool"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.parse_window()
        self.count_include_pad = bool(int_attr(self, "count_include_pad", 0))
        self.x_zero_point = int_attr(self, "x_zero_point", 0)
        self.scale = float(np.float32(float_attr(self, "scale", 0.0)))
        if "scale" not in attrs or not 0.0 < self.scale < float("inf"):
            raise self.error(f"scale must be set to a positive finite x_scale / y_scale, "
                             f"got {attrs.get('scale')!r}")
        self.stage = OutputStage(self)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_eight_bit(self, x, "X")
        lo, hi = type_range(x.dtype)
        if not lo <= self.x_zero_point <= hi:
            raise self.error(f"x_zero_point {self.x_zero_point} is outside X's range")
        return [TensorInfo(self.stage.dtype, (*x.shape[:2], *self.window_output_shape(x.shape)))]

    def multipliers(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return per-output (M, s) arrays for an array of window counts."""
        table = {int(c): quantize_multiplier(self.scale / int(c)) for c in np.unique(counts)}
        m = np.vectorize(lambda c: table[int(c)][0], otypes=[np.int64])(counts)
        s = np.vectorize(lambda c: table[int(c)][1], otypes=[np.int64])(counts)
        return m, s

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        self.window_output_shape(x.shape)
        rank = len(self.kernel)
        ones = (1,) * rank
        centered = x.astype(np.int64) - self.x_zero_point  # padding cells add 0
        windows = pool_windows(centered, self.kernel, self.strides, self.pads, ones,
                               ceil_mode=False, fill=0)
        total = windows.sum(axis=tuple(range(windows.ndim - rank, windows.ndim)))
        counts = window_counts(x.shape[2:], self.kernel, self.strides, self.pads, ones,
                               ceil_mode=False, count_pads=self.count_include_pad)
        m, s = self.multipliers(counts)
        shape = (1, 1, *counts.shape)
        y = output_stage(total, 0, m.reshape(shape), s.reshape(shape), self.stage,
                         channel_axis=None)
        return [y]


OPS = (QAveragePool,)
