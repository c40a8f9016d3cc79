"""GroupNormalization: normalize groups of channels, then scale and shift."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, float_attr, fold, int_attr
from systolic.reference.ops.base import Op, TensorInfo


class GroupNormalization(Op):
    """GroupNormalization-18, -21. X is (N, C, ...); the C channels form `num_groups`
    (required, dividing C) groups of consecutive channels, each normalized over its
    channels and spatial positions: (x - mean) / sqrt(var + epsilon) (epsilon 1e-5,
    population variance, computed in float64 and rounded once). Then y = scale * x̂ + bias
    with scale and bias of num_groups entries (version 18: one per group) or C entries
    (version 21: one per channel; `stash_type` only names the precision of the statistics,
    which are always float64 here). Float types only."""

    op_type = "GroupNormalization"
    since_versions = (18, 21)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.required_attr("num_groups")
        self.groups = int_attr(self, "num_groups", 1)
        self.epsilon = float_attr(self, "epsilon", 1e-5)

    def _check(self, x: tuple[int, ...], scale: tuple[int, ...], bias: tuple[int, ...]) -> None:
        if len(x) < 2 or self.groups < 1 or x[1] % self.groups:
            raise self.error(f"X of shape {list(x)} must be (N, C, ...) with C a multiple of "
                             f"num_groups {self.groups}")
        per = self.groups if self.version < 21 else x[1]
        if scale != (per,) or bias != (per,):
            raise self.error(f"scale {list(scale)} and bias {list(bias)} must have shape "
                             f"[{per}] ({'num_groups' if self.version < 21 else 'C'})")

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, scale, bias = inputs
        assert x is not None and scale is not None and bias is not None
        for name, info in (("X", x), ("scale", scale), ("bias", bias)):
            check_type(self, info, FLOAT_TYPES, name)
        self._check(x.shape, scale.shape, bias.shape)
        return fold(self, inputs, [TensorInfo(x.dtype, x.shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, scale, bias = inputs
        assert x is not None and scale is not None and bias is not None
        self._check(x.shape, scale.shape, bias.shape)
        n, c = x.shape[:2]
        grouped = x.astype(np.float64).reshape(n, self.groups, -1)
        mean = grouped.mean(axis=2, keepdims=True)
        var = grouped.var(axis=2, keepdims=True)
        normal = ((grouped - mean) / np.sqrt(var + self.epsilon)).reshape(n, c, -1)
        g, b = self._per_channel(scale, c), self._per_channel(bias, c)
        return [(normal * g + b).reshape(x.shape).astype(x.dtype)]

    def _per_channel(self, values: np.ndarray, channels: int) -> np.ndarray:
        """Return `values` (one per group before version 21) as float64 of shape (1, C, 1)."""
        wide = values.astype(np.float64)
        if self.version < 21:
            wide = np.repeat(wide, channels // self.groups)
        return wide.reshape(1, channels, 1)


OPS = (GroupNormalization,)
