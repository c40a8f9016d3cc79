"""systolic.QConvInt: an integer convolution whose int32 accumulators leave the array
unrequantized (STORE with `raw`): the ConvInteger of dynamic quantization, with the part of a
run-time zero point left to the host (docs/numeric-contract.md "Raw accumulators")."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, DataType
from systolic.reference.kernels.conv import conv_nd
from systolic.reference.ops._integer_conv import IntegerConv
from systolic.reference.ops.base import TensorInfo

__all__ = ["QConvInt"]

_FLIP = 128


class QConvInt(IntegerConv):
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

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, w, *rest = inputs
        assert x is not None and w is not None
        out = self.check_operands(x, w, rest[0] if rest else None)
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
