"""systolic.QConvInt: an integer convolution whose int32 accumulators leave the array
unrequantized (STORE with `raw`): the ConvInteger of dynamic quantization, with the part of a
run-time zero point left to the host (docs/numeric-contract.md "Raw accumulators")."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, Attrs, DataType
from systolic.reference.kernels.conv import conv_nd, conv_output_shape
from systolic.reference.ops._shared import int_attr, ints_attr
from systolic.reference.ops._systolic import check_eight_bit, type_range
from systolic.reference.ops.base import Op, TensorInfo

__all__ = ["QConvInt"]

_FLIP = 128


class QConvInt(Op):
    """systolic.QConvInt-1: Y = QConvInt(X, W, B?), Y int32.

    X uint8/int8 [N, C, *spatial]; W int8 constant [M, C/group, *kernel] (its zero point
    subtracted); B optional int32 [M]. Attributes: strides, pads (begins then ends),
    dilations (default 1 and 0), group (default 1), x_zero_point (in X's type, default 0: the
    value the padding holds). Y[n, m] = wrap32(sum over the window of (Xpad - z0) * W + B[m])
    with z0 = 128 for uint8 X and 0 for int8 X (the LOAD's flip_sign), the padding holding
    x_zero_point. (The mapper folds (z0 - x_zero_point) * sum W into B.)
    """

    domain = SYSTOLIC_DOMAIN
    op_type = "QConvInt"
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
        if x_shape[1] != w_shape[1] * self.group or w_shape[0] % self.group != 0:
            raise self.error(f"X has {x_shape[1]} channels and W is {list(w_shape)}: with "
                             f"group={self.group}, W must be [M, C/group, ...]")
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
        return [TensorInfo(DataType.INT32, (x.shape[0], w.shape[0], *out))]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, w, *rest = inputs
        b = rest[0] if rest else None
        assert x is not None and w is not None
        strides, pads, dilations, _ = self.geometry(x.shape, w.shape)
        implied = _FLIP if x.dtype == np.uint8 else 0
        # (Xpad - z0) = (Xpad - x_zp) + (x_zp - z0): pad with 0, add the constant's window sum
        centered = x.astype(np.int64) - self.x_zero_point
        acc = conv_nd(centered, w.astype(np.int64), strides=strides, pads=pads,
                      dilations=dilations, group=self.group, acc_dtype=np.int64)
        sums = w.astype(np.int64).reshape(w.shape[0], -1).sum(axis=1)
        acc = acc + ((self.x_zero_point - implied) * sums).reshape((1, -1) + (1,) * (x.ndim - 2))
        if b is not None:
            acc = acc + b.astype(np.int64).reshape((1, -1) + (1,) * (x.ndim - 2))
        wrapped = (acc + 2**31) % 2**32 - 2**31
        return [np.asarray(wrapped.astype(np.int32))]


OPS = (QConvInt,)
