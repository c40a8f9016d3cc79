"""OneHot: expand indices into one-hot vectors along a new axis."""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs
from systolic.reference.ops._shared import NUMERIC_TYPES, check_type, fold, int_attr, normalize_axis
from systolic.reference.ops.base import Op, TensorInfo


class OneHot(Op):
    """OneHot-9, -11 (negative indices count back from depth). depth is a one-element
    numeric input (must be known before running: it sets the output shape); values is
    [off, on] and sets the output type. The output has indices' shape with depth inserted
    at `axis` (default -1, counted in the output's rank); an index outside [-depth, depth)
    gives an all-off vector."""

    op_type = "OneHot"
    since_versions = (9, 11)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", -1)

    def _depth(self, depth: np.ndarray) -> int:
        if depth.size != 1:
            raise self.error(f"depth must hold one value, got shape {list(depth.shape)}")
        value = int(np.asarray(depth).reshape(-1)[0])
        if value < 1:
            raise self.error(f"depth must be positive, got {value}")
        return value

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        indices, depth, values = inputs
        assert indices is not None and depth is not None and values is not None
        check_type(self, indices, NUMERIC_TYPES, "indices")
        check_type(self, depth, NUMERIC_TYPES, "depth")
        if values.size != 2:
            raise self.error(f"values must hold [off, on], got shape {list(values.shape)}")
        if depth.value is None:
            raise UnsupportedError(
                f"node {self.node_label!r} (ai.onnx.OneHot:{self.version}): depth is computed "
                "at run time; the reference needs static shapes, so make depth a constant")
        n = self._depth(depth.value)
        axis = normalize_axis(self, self.axis, len(indices.shape) + 1)
        shape = (*indices.shape[:axis], n, *indices.shape[axis:])
        return fold(self, inputs, [TensorInfo(values.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        indices, depth, values = inputs
        assert indices is not None and depth is not None and values is not None
        n = self._depth(depth)
        axis = normalize_axis(self, self.axis, indices.ndim + 1)
        index = np.trunc(indices).astype(np.int64) if indices.dtype.kind == "f" else (
            indices.astype(np.int64))
        if self.version >= 11:
            index = np.where(index < 0, index + n, index)
        hot = np.expand_dims(index, axis) == np.arange(n).reshape(
            [n if i == axis else 1 for i in range(indices.ndim + 1)])
        off, on = values.reshape(-1)
        return [np.where(hot, on, off).astype(values.dtype)]


OPS = (OneHot,)
