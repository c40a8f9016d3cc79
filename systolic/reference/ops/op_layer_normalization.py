"""LayerNormalization: normalise over the trailing axes from `axis`, then scale and shift."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import (
    FLOAT_TYPES,
    broadcast_shape,
    check_type,
    float_attr,
    int_attr,
    normalize_axis,
)
from systolic.reference.ops.base import Op, TensorInfo

_STASH_TYPES = {DataType.FLOAT.value, DataType.DOUBLE.value, DataType.FLOAT16.value,
                DataType.BFLOAT16.value}


class LayerNormalization(Op):
    """LayerNormalization-17: over the axes [axis, rank) (axis defaults to -1),
    Y = (X - mean) / sqrt(var + epsilon) * Scale + B, with the biased variance and epsilon
    1e-5 by default; Scale and B broadcast to the normalised shape. The optional outputs Mean
    and InvStdDev have X's shape with 1 on the normalised axes, in the stash type.

    Everything is computed in float64 and rounded once, which is at least as accurate as the
    stash_type precision the spec asks for (float32 by default)."""

    op_type = "LayerNormalization"
    since_versions = (17,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.axis = int_attr(self, "axis", -1)
        self.epsilon = float_attr(self, "epsilon", 1e-5)
        self.stash_type = int_attr(self, "stash_type", DataType.FLOAT.value)
        if self.stash_type not in _STASH_TYPES:
            raise self.error(f"stash_type {self.stash_type} is not a float type; use 1 (float)")

    def _stash_dtype(self, x: DataType) -> DataType:
        return DataType(self.stash_type) if self.stash_type != DataType.BFLOAT16.value else x

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, scale, *rest = inputs
        bias = rest[0] if rest else None
        assert x is not None and scale is not None
        check_type(self, x, FLOAT_TYPES, "X")
        axis = normalize_axis(self, self.axis, len(x.shape))
        normalised = x.shape[axis:]
        for info, name in ((scale, "Scale"), (bias, "B")):
            if info is None:
                continue
            if info.dtype != x.dtype:
                raise self.error(f"{name} is {info.dtype.short} but X is {x.dtype.short}")
            if broadcast_shape(self, normalised, info.shape) != normalised:
                raise self.error(f"{name} {list(info.shape)} does not broadcast to the "
                                 f"normalised shape {list(normalised)}")
        reduced = x.shape[:axis] + (1,) * len(normalised)
        stash = self._stash_dtype(x.dtype)
        outputs = [TensorInfo(x.dtype, x.shape), TensorInfo(stash, reduced),
                   TensorInfo(stash, reduced)]
        return outputs[: max(self.num_outputs or 1, 1)]

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, scale, *rest = inputs
        bias = rest[0] if rest else None
        assert x is not None and scale is not None
        axis = normalize_axis(self, self.axis, x.ndim)
        axes = tuple(range(axis, x.ndim))
        wide = x.astype(np.float64)
        mean = wide.mean(axis=axes, keepdims=True)
        centred = wide - mean
        inv_std = 1.0 / np.sqrt((centred * centred).mean(axis=axes, keepdims=True)
                                + self.epsilon)
        y = centred * inv_std * scale.astype(np.float64)
        if bias is not None:
            y = y + bias.astype(np.float64)
        stash = self._stash_dtype(DataType.from_numpy(x.dtype)).numpy
        outputs = [y.astype(x.dtype), mean.astype(stash), inv_std.astype(stash)]
        return outputs[: max(self.num_outputs or 1, 1)]


OPS = (LayerNormalization,)
