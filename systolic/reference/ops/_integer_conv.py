"""`IntegerConv`: the attributes and operand checks systolic.QConv and systolic.QConvInt share
(the array's convolution, with and without its output stage)."""

from collections.abc import Sequence

from systolic.ir import Attrs, DataType
from systolic.reference.kernels.conv import conv_output_shape
from systolic.reference.ops._shared import int_attr, ints_attr
from systolic.reference.ops._systolic import check_eight_bit, type_range
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["IntegerConv"]


class IntegerConv(Op):
    """Reads group (>= 1), strides, dilations, pads (begins then ends; defaults 1, 1, 0) and
    x_zero_point (in X's type, default 0: the value the padding holds). X is uint8/int8
    [N, C, *spatial], W an int8 constant [M, C/group, *kernel], B an optional int32 [M]."""

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.group = int_attr(self, "group", 1)
        if self.group < 1:
            raise self.error(f"group must be at least 1, got {self.group}")
        self.strides = ints_attr(self, "strides")
        self.dilations = ints_attr(self, "dilations")
        self.pads = ints_attr(self, "pads")
        self.x_zero_point = int_attr(self, "x_zero_point", 0)

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
        self.check_channels(m)
        out = conv_output_shape(x_shape[2:], w_shape[2:], strides, pads, dilations)
        if min(out) < 1:
            raise self.error(f"kernel {list(w_shape[2:])} does not fit input {list(x_shape)}")
        return strides, pads, dilations, out

    def check_channels(self, m: int) -> None:
        """Check per-output-channel attributes against the M output channels (none here)."""

    def check_operands(
        self, x: TensorInfo, w: TensorInfo, b: TensorInfo | None
    ) -> tuple[int, ...]:
        """Check X, W, B and x_zero_point; return the output spatial shape."""
        check_eight_bit(self, x, "X")
        if w.dtype != DataType.INT8:
            raise self.error(f"W has element type {w.dtype.short}; expected i8")
        lo, hi = type_range(x.dtype)
        if not lo <= self.x_zero_point <= hi:
            raise self.error(f"x_zero_point {self.x_zero_point} is outside X's range")
        _, _, _, out = self.geometry(x.shape, w.shape)
        if b is not None and (b.dtype != DataType.INT32 or b.shape != (w.shape[0],)):
            raise self.error(f"B must be i32[{w.shape[0]}], got {b.dtype.short}{list(b.shape)}")
        return out
