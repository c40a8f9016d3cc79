"""systolic.QMaxPool: max pooling of a quantized tensor with a fused clamp."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs, DataType
from systolic.reference.kernels.pool import pool_windows
from systolic.reference.ops._systolic import (
    OutputStage,
    PoolWindowOp,
    check_eight_bit,
    type_range,
)
from systolic.reference.ops.base import TensorInfo


class QMaxPool(PoolWindowOp):
    """systolic.QMaxPool-1: Y = QMaxPool(X), X uint8/int8 [N, C, *spatial], Y of X's type.

    Attributes: kernel_shape, strides (default 1), pads (begins then ends, default 0; an ONNX
    ceil_mode is already turned into end padding), y_lo, y_hi (bounds in X's type, default its
    range). Dilation 1 only. Y = clamp(max over the window's input cells, y_lo, y_hi):
    padding cells never win.
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QMaxPool"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.parse_window(" (a window of padding only has no maximum)")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_eight_bit(self, x, "X")
        OutputStage(self, x.dtype, with_zero_point=False)
        return [TensorInfo(x.dtype, (*x.shape[:2], *self.window_output_shape(x.shape)))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        self.window_output_shape(x.shape)
        dtype = DataType.from_numpy(x.dtype)
        stage = OutputStage(self, dtype, with_zero_point=False)
        rank = len(self.kernel)
        lowest, _ = type_range(dtype)
        windows = pool_windows(x, self.kernel, self.strides, self.pads, (1,) * rank,
                               ceil_mode=False, fill=lowest)
        y = windows.max(axis=tuple(range(windows.ndim - rank, windows.ndim)))
        return [np.ascontiguousarray(np.clip(y, stage.lo, stage.hi).astype(x.dtype))]


OPS = (QMaxPool,)
