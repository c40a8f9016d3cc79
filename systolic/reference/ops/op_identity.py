"""Identity: the output is the input."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.ops.base import Op, TensorInfo


class Identity(Op):
    """Identity-1, -13, -14, -16, -19, -21, -23 (later versions add types; sequence and
    optional inputs are not supported since the reference holds only tensors)."""

    op_type = "Identity"
    since_versions = (1, 13, 14, 16, 19, 21, 23)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        return [x]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        return [x]


OPS = (Identity,)
