"""LpNormalization: divide by the L1 or L2 norm along one axis."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold, int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class LpNormalization(Op):
    """LpNormalization-1, -22: x / ||x||_p along `axis` (default -1), p 1 or 2 (default 2);
    the norm is computed in float64 and a zero norm gives 0 (as onnx's reference and
    onnxruntime do, not NaN). Float types only."""

    op_type = "LpNormalization"
    since_versions = (1, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", -1)
        self.p = int_attr(self, "p", 2)
        if self.p not in (1, 2):
            raise self.error(f"attribute 'p' must be 1 or 2, got {self.p}")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        (x,) = inputs
        assert x is not None
        check_type(self, x, FLOAT_TYPES, "input")
        normalize_axis(self, self.axis, len(x.shape))
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        (x,) = inputs
        assert x is not None
        axis = normalize_axis(self, self.axis, x.ndim)
        wide = x.astype(np.float64)
        size = np.abs(wide) if self.p == 1 else wide * wide
        norm = np.sum(size, axis=axis, keepdims=True)
        norm = norm if self.p == 1 else np.sqrt(norm)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(norm == 0, 0.0, wide / norm)
        return [out.astype(x.dtype)]


OPS = (LpNormalization,)
