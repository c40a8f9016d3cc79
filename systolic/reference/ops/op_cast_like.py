"""CastLike: convert an input to the element type of a second input."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import DataType
from systolic.reference.ops._shared import fold
from systolic.reference.ops.base import Op, TensorInfo


class CastLike(Op):
    """CastLike-15, -19, -21, -23 (the later versions add float8/int4 types and `saturate`,
    which only affects float8 targets: those types are unsupported). The output has input's
    shape and target_type's element type (target_type's values are not read). Conversions
    are Cast's: float to integer truncates toward zero as numpy does."""

    op_type = "CastLike"
    since_versions = (15, 19, 21, 23)

    def _unsupported(self, dtype: DataType) -> UnsupportedError:
        return UnsupportedError(f"node {self.node_label!r} (ai.onnx.CastLike:{self.version}): "
                                f"casting to or from {dtype.name} is not supported")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, target = inputs
        assert x is not None and target is not None
        for dtype in (x.dtype, target.dtype):
            if not dtype.has_numpy or dtype == DataType.STRING:
                raise self._unsupported(dtype)
        return fold(self, [x, TensorInfo(target.dtype, (), np.zeros((), target.dtype.numpy))],
                    [TensorInfo(target.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, target = inputs
        assert x is not None and target is not None
        with np.errstate(invalid="ignore", over="ignore"):
            return [x.astype(target.dtype)]


OPS = (CastLike,)
