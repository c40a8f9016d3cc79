"""AffineGrid: the sampling grid of an affine transform, for GridSample (spatial
transformer networks)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import FLOAT_TYPES, check_type, fold, int_attr, known_ints
from systolic.reference.ops.base import Op, TensorInfo


def base_coordinates(size: int, align_corners: bool) -> np.ndarray:
    """Return the normalized coordinates of `size` positions along one axis: pixel centers
    from -1 to 1 with `align_corners`, else the centers of `size` equal cells of [-1, 1];
    one position is at 0."""
    if size <= 1:
        return np.zeros(max(size, 0))
    if align_corners:
        return np.linspace(-1.0, 1.0, size)
    return (np.arange(size) * 2.0 + 1.0) / size - 1.0


class AffineGrid(Op):
    """AffineGrid-20: theta (N, 2, 3) or (N, 3, 4) and size (int64, known before running:
    [N, C, H, W] or [N, C, D, H, W]) give the grid (N, H, W, 2) or (N, D, H, W, 3) whose
    entry at each output position is theta times the position's homogeneous normalized
    coordinates (x, y[, z], 1), x along the last axis. Computed in float64, rounded once
    to theta's type."""

    op_type = "AffineGrid"
    since_versions = (20,)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.align = int_attr(self, "align_corners", 0) != 0

    def _spatial(self, theta: tuple[int, ...], size: tuple[int, ...]) -> tuple[int, ...]:
        k = len(size) - 2
        if k not in (2, 3) or theta != (size[0], k, k + 1):
            raise self.error(f"theta {list(theta)} and size {list(size)} must be (N, 2, 3) "
                             "with [N, C, H, W] or (N, 3, 4) with [N, C, D, H, W]")
        return size[2:]

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        theta, size = inputs
        assert theta is not None and size is not None
        check_type(self, theta, FLOAT_TYPES, "theta")
        if size.dtype != DataType.INT64:
            raise self.error(f"size must be int64, got {size.dtype.short}")
        found = known_ints(self, size, "size") or ()
        spatial = self._spatial(theta.shape, found)
        shape = (theta.shape[0], *spatial, len(spatial))
        return fold(self, inputs, [TensorInfo(theta.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        theta, size = inputs
        assert theta is not None and size is not None
        spatial = self._spatial(theta.shape, tuple(int(v) for v in size.reshape(-1)))
        axes = [base_coordinates(n, self.align) for n in spatial]
        mesh = np.meshgrid(*axes, indexing="ij")
        homogeneous = np.stack([*mesh[::-1], np.ones(spatial)], axis=-1)
        grid = np.einsum("...j,nij->n...i", homogeneous, theta.astype(np.float64))
        return [grid.astype(theta.dtype)]


OPS = (AffineGrid,)
