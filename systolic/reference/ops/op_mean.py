"""Mean: the element-wise average of one or more tensors."""

from collections.abc import Sequence

import numpy as np

from systolic.reference.ops._shared import FLOAT_TYPES, check_type
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_variadic import _Variadic


class Mean(_Variadic):
    """Mean-1, -6, -8 (broadcasting), -13: the sum of the inputs (broadcast from opset 8)
    divided by their count, summed in float64 and rounded once; float types only."""

    op_type = "Mean"
    since_versions = (1, 6, 8, 13)

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        for info in inputs:
            if info is not None:
                check_type(self, info, FLOAT_TYPES, "an input")
        return super().infer(inputs)

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.add(a, b, dtype=np.float64))

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        given = [x for x in inputs if x is not None]
        (total,) = super().run([x.astype(np.float64) for x in given])
        return [(total / len(given)).astype(given[0].dtype)]


OPS = (Mean,)
