"""systolic.QConv: the fused integer convolution the mapper produces (Conv + requantization,
bias, zero points, ReLU/Clip), exactly as the accelerator computes it."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs
from systolic.reference.kernels.conv import conv_nd
from systolic.reference.ops._integer_conv import IntegerConv
from systolic.reference.ops._systolic import OutputStage, int_list_attr, output_stage
from systolic.reference.ops.base import TensorInfo


class QConv(IntegerConv):
    """systolic.QConv-1: Y = QConv(X, W, B?).

    X is uint8/int8 [N, C, *spatial] (1-D or 2-D convolutions in practice, any rank here),
    W an int8 constant [M, C/group, *kernel] whose zero point is already subtracted, B an
    optional int32 [M]. Attributes: strides, pads (begins then ends), dilations (default 1
    and 0), group (default 1), x_zero_point (in X's type), multiplier and shift (M values
    each, the output stage's (M, s) per output channel), y_zero_point, y_type (2 uint8, 3
    int8), y_lo, y_hi (bounds in Y's type; default its range).

    acc[n, m] = sum over the window of (Xpad - x_zero_point) * W + B[m], exact in int64, the
    padding holding x_zero_point (so it adds nothing); then
    Y = clamp(round_half_to_even(acc * M[m] / 2**(31 + s[m])) + y_zero_point, y_lo, y_hi).
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QConv"
    since_versions = (1,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.multiplier = int_list_attr(self, "multiplier")
        self.shift = int_list_attr(self, "shift")
        self.stage = OutputStage(self)
        if len(self.multiplier) != len(self.shift):
            raise self.error(f"multiplier ({len(self.multiplier)} values) and shift "
                             f"({len(self.shift)}) must have one value per output channel")

    def check_channels(self, m: int) -> None:
        if len(self.multiplier) != m:
            raise self.error(f"multiplier and shift need {m} values (one per output channel), "
                             f"got {len(self.multiplier)}")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, w, *rest = inputs
        assert x is not None and w is not None
        out = self.check_operands(x, w, rest[0] if rest else None)
        return [TensorInfo(self.stage.dtype, (x.shape[0], w.shape[0], *out))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, w, *rest = inputs
        b = rest[0] if rest else None
        assert x is not None and w is not None
        strides, pads, dilations, _ = self.geometry(x.shape, w.shape)
        centered = x.astype(np.int64) - self.x_zero_point  # padding with 0 = padding with x_zp
        acc = conv_nd(centered, w.astype(np.int64), strides=strides, pads=pads,
                      dilations=dilations, group=self.group, acc_dtype=np.int64)
        bias = np.zeros(w.shape[0], np.int64) if b is None else b.astype(np.int64)
        y = output_stage(acc, bias, self.multiplier, self.shift, self.stage, channel_axis=1)
        return [y]


OPS = (QConv,)
