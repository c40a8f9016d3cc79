"""systolic.QConv: the fused integer convolution the mapper produces (Conv + requantization,
bias, zero points, ReLU/Clip), exactly as the accelerator computes it."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs, DataType
from systolic.reference.kernels.conv import conv_nd, conv_output_shape
from systolic.reference.ops._shared import int_attr, ints_attr
from systolic.reference.ops._systolic import (
    OutputStage,
    check_eight_bit,
    int_list_attr,
    output_stage,
    type_range,
)
from systolic.reference.ops.base import Op, TensorInfo


class QConv(Op):
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
        self.group = int_attr(self, "group", 1)
        if self.group < 1:
            raise self.error(f"group must be at least 1, got {self.group}")
        self.strides = ints_attr(self, "strides")
        self.dilations = ints_attr(self, "dilations")
        self.pads = ints_attr(self, "pads")
        self.x_zero_point = int_attr(self, "x_zero_point", 0)
        self.multiplier = int_list_attr(self, "multiplier")
        self.shift = int_list_attr(self, "shift")
        self.stage = OutputStage(self)
        if len(self.multiplier) != len(self.shift):
            raise self.error(f"multiplier ({len(self.multiplier)} values) and shift "
                             f"({len(self.shift)}) must have one value per output channel")

    def geometry(
        self, x_shape: Sequence[int], w_shape: Sequence[int]
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Return (strides, pads, dilations, output spatial shape), checked."""
        rank = len(x_shape) - 2
        if rank < 1 or len(w_shape) != len(x_shape):
            raise self.error(f"X {list(x_shape)} and W {list(w_shape)} must both be "
                             "[N, C, *spatial] of the same rank")
        strides = self.strides or (1,) * rank
        dilations = self.dilations or (1,) * rank
        pads = self.pads or (0,) * (2 * rank)
        if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
            raise self.error(f"strides, dilations ({rank} values) and pads ({2 * rank}) do not "
                             f"fit a {rank}-D convolution")
        if min((*strides, *dilations)) < 1 or min(pads) < 0:
            raise self.error("strides and dilations must be positive, pads not negative")
        c, m = x_shape[1], w_shape[0]
        if c != w_shape[1] * self.group or m % self.group != 0:
            raise self.error(f"X has {c} channels and W is {list(w_shape)}: with group="
                             f"{self.group}, W must be [M, C/group, ...], M divisible by group")
        if len(self.multiplier) != m:
            raise self.error(f"multiplier and shift need {m} values (one per output channel), "
                             f"got {len(self.multiplier)}")
        out = conv_output_shape(x_shape[2:], w_shape[2:], strides, pads, dilations)
        if min(out) < 1:
            raise self.error(f"kernel {list(w_shape[2:])} does not fit input {list(x_shape)}")
        return strides, pads, dilations, out

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, w, *rest = inputs
        b = rest[0] if rest else None
        assert x is not None and w is not None
        check_eight_bit(self, x, "X")
        if w.dtype != DataType.INT8:
            raise self.error(f"W has element type {w.dtype.short}; expected i8")
        lo, hi = type_range(x.dtype)
        if not lo <= self.x_zero_point <= hi:
            raise self.error(f"x_zero_point {self.x_zero_point} is outside X's range")
        _, _, _, out = self.geometry(x.shape, w.shape)
        if b is not None and (b.dtype != DataType.INT32 or b.shape != (w.shape[0],)):
            raise self.error(f"B must be i32[{w.shape[0]}], got {b.dtype.short}{list(b.shape)}")
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
