"""systolic.QMaxPool: max pooling of a quantized tensor with a fused clamp."""

from collections.abc import Sequence

import numpy as np
from systolic.mapper.ir import Attrs, DataType

from ..kernels.conv import conv_output_shape
from ..kernels.pool import pool_windows
from ..op import Op, TensorInfo
from ._shared import ints_attr
from ._systolic import SYSTOLIC_DOMAIN, OutputStage, check_eight_bit, int_list_attr, type_range


class QMaxPool(Op):
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
        self.kernel = int_list_attr(self, "kernel_shape")
        rank = len(self.kernel)
        self.strides = ints_attr(self, "strides") or (1,) * rank
        self.pads = ints_attr(self, "pads") or (0,) * (2 * rank)
        if len(self.strides) != rank or len(self.pads) != 2 * rank:
            raise self.error(f"strides need {rank} values and pads {2 * rank}, as kernel_shape")
        if min((*self.kernel, *self.strides)) < 1 or min(self.pads) < 0:
            raise self.error("kernel_shape and strides must be positive, pads not negative")
        if any(p >= k for p, k in zip(self.pads, self.kernel * 2, strict=True)):
            raise self.error(f"pads {list(self.pads)} must be smaller than kernel_shape "
                             f"{list(self.kernel)} (a window of padding only has no maximum)")

    def _out(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) != len(self.kernel) + 2:
            raise self.error(f"X {list(shape)} must be [N, C] plus {len(self.kernel)} spatial "
                             "axes, as kernel_shape")
        ones = (1,) * len(self.kernel)
        out = conv_output_shape(shape[2:], self.kernel, self.strides, self.pads, ones)
        if min(out) < 1:
            raise self.error(f"kernel {list(self.kernel)} does not fit input {list(shape)}")
        return out

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_eight_bit(self, x, "X")
        OutputStage(self, x.dtype, with_zero_point=False)
        return [TensorInfo(x.dtype, (*x.shape[:2], *self._out(x.shape)))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        self._out(x.shape)
        dtype = DataType.from_numpy(x.dtype)
        stage = OutputStage(self, dtype, with_zero_point=False)
        rank = len(self.kernel)
        lowest, _ = type_range(dtype)
        windows = pool_windows(x, self.kernel, self.strides, self.pads, (1,) * rank,
                               ceil_mode=False, fill=lowest)
        y = windows.max(axis=tuple(range(windows.ndim - rank, windows.ndim)))
        return [np.ascontiguousarray(np.clip(y, stage.lo, stage.hi).astype(x.dtype))]


OPS = (QMaxPool,)
