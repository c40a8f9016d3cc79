"""TopK: the K largest (or smallest) elements along one axis and their indices."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import (
    FLOAT_TYPES,
    NUMERIC_TYPES,
    check_type,
    fold,
    int_attr,
    known_ints,
    normalize_axis,
)
from systolic.reference.ops.base import Op, TensorInfo


def top_k_order(x: np.ndarray, k: int, axis: int, largest: bool) -> np.ndarray:
    """Return the indices of the `k` largest (smallest) elements of `x` along `axis`, the
    best first; equal values keep the lower index first, as the ONNX spec asks."""
    if not largest:
        return np.asarray(np.argsort(x, axis=axis, kind="stable").take(range(k), axis=axis))
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    descending = np.flip(flipped, axis)
    return np.asarray((n - 1 - descending).take(range(k), axis=axis))


class TopK(Op):
    """TopK-1 (k an attribute), -10 (K a one-element int64 input, which must be known
    before running because it sets the output shape), -11 (negative axis, `largest`,
    `sorted`; integer types). Outputs Values (X's type) and Indices (int64), of X's shape
    with K along `axis`. The result is always sorted (best first), which `sorted`=0 allows."""

    op_type = "TopK"
    since_versions = (1, 10, 11)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", -1)
        self.k_attr = int_attr(self, "k", 0) if version < 10 else None
        if version < 10:
            self.required_attr("k")
        new = version >= 11
        self.largest = int_attr(self, "largest", 1) != 0 if new else True
        self.sorted = int_attr(self, "sorted", 1) != 0 if new else True
        self.types = NUMERIC_TYPES if new else FLOAT_TYPES

    def _k(self, given: tuple[int, ...] | None, size: int) -> int:
        k = self.k_attr if self.k_attr is not None else (given or (None,))[0]
        if given is not None and len(given) != 1:
            raise self.error(f"K must hold one integer, got {list(given)}")
        if k is None or not 0 <= k <= size:
            raise self.error(f"K={k} must be between 0 and the axis's size {size}")
        return k

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, *rest = inputs
        assert x is not None
        check_type(self, x, self.types, "X")
        axis = normalize_axis(self, self.axis, len(x.shape))
        given = known_ints(self, rest[0], "K") if rest else None
        k = self._k(given, x.shape[axis])
        shape = (*x.shape[:axis], k, *x.shape[axis + 1:])
        return fold(self, inputs, [TensorInfo(x.dtype, shape), TensorInfo(DataType.INT64, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, *rest = inputs
        assert x is not None
        axis = normalize_axis(self, self.axis, x.ndim)
        given = tuple(int(v) for v in rest[0].reshape(-1)) if rest and rest[0] is not None else None
        k = self._k(given, x.shape[axis])
        order = top_k_order(x, k, axis, self.largest).astype(np.int64)
        return [np.take_along_axis(x, order, axis=axis), order]


OPS = (TopK,)
