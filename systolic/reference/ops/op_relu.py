"""Relu: y = max(x, 0)."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.ops.base import Op, TensorInfo


class Relu(Op):
    """Relu-6, -13, -14 (later versions only widen the types). Relu-1's `consumed_inputs`
    legacy attribute is accepted and ignored."""

    op_type = "Relu"
    since_versions = (1, 6, 13, 14)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        return [TensorInfo(x.dtype, x.shape)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [np.maximum(x, np.zeros((), dtype=x.dtype))]


OPS = (Relu,)
