"""RoiAlign: pool a fixed-size feature map out of each region of interest by bilinear
sampling (two-stage detectors, Mask R-CNN)."""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType
from systolic.reference.ops._shared import (
    FLOAT_TYPES,
    check_type,
    float_attr,
    fold,
    int_attr,
    str_attr,
)
from systolic.reference.ops.base import Op, TensorInfo


def _axis_samples(start: float, size: float, bins: int, grid: int, limit: int
                  ) -> tuple[np.ndarray, ...]:
    """Return, for the bins·grid sample positions along one axis of length `limit`, the low
    and high pixel, their weights and whether the sample lies inside [-1, limit] (outside:
    it contributes 0), as onnxruntime's bilinear pre-computation does."""
    steps = np.arange(bins)[:, None] * (size / bins) + (np.arange(grid)[None, :] + 0.5) * (
        size / bins / grid)
    pos = (start + steps).reshape(-1)
    inside = (pos >= -1.0) & (pos <= limit)
    pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    clamp = low >= limit - 1
    low = np.where(clamp, limit - 1, low)
    high = np.where(clamp, limit - 1, low + 1)
    pos = np.where(clamp, low, pos)
    frac = pos - low
    return low, high, 1.0 - frac, frac, inside


class RoiAlign(Op):
    """RoiAlign-10, -16 (`coordinate_transformation_mode`, default "half_pixel": the region
    is shifted by half a pixel; version 10's behaviour is "output_half_pixel", which also
    widens a region under one pixel to one), -22 (more float types). X is (N, C, H, W), rois
    (R, 4) as x1, y1, x2, y2 in input coordinates scaled by `spatial_scale`, batch_indices
    (R,) int64; Y is (R, C, output_height, output_width). Each output bin averages
    (`mode` "avg") a grid of `sampling_ratio`² bilinear samples (0: ceil(region/bins) per
    axis), or ("max") takes the largest of the samples' four weighted corners, as
    onnxruntime and onnx's reference do. Computed in float64, rounded once."""

    op_type = "RoiAlign"
    since_versions = (10, 16, 22)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.mode = str_attr(self, "mode", "avg")
        default = "half_pixel" if version >= 16 else "output_half_pixel"
        ctm = str_attr(self, "coordinate_transformation_mode", default) if version >= 16 else (
            default)
        if self.mode not in ("avg", "max") or ctm not in ("half_pixel", "output_half_pixel"):
            raise self.error(f"mode {self.mode!r} must be 'avg' or 'max' and "
                             f"coordinate_transformation_mode {ctm!r} 'half_pixel' or "
                             "'output_half_pixel'")
        self.half_pixel = ctm == "half_pixel"
        self.out_h = int_attr(self, "output_height", 1)
        self.out_w = int_attr(self, "output_width", 1)
        self.ratio = int_attr(self, "sampling_ratio", 0)
        self.scale = float_attr(self, "spatial_scale", 1.0)
        if self.out_h < 1 or self.out_w < 1 or self.ratio < 0:
            raise self.error("output_height and output_width must be positive and "
                             "sampling_ratio not negative")

    def _shape(self, x: tuple[int, ...], rois: tuple[int, ...], index: tuple[int, ...]
               ) -> tuple[int, ...]:
        if len(x) != 4 or len(rois) != 2 or rois[1] != 4 or index != rois[:1]:
            raise self.error(f"X {list(x)}, rois {list(rois)} and batch_indices {list(index)} "
                             "must be (N, C, H, W), (R, 4) and (R,)")
        return rois[0], x[1], self.out_h, self.out_w

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x, rois, index = inputs
        assert x is not None and rois is not None and index is not None
        check_type(self, x, FLOAT_TYPES, "X")
        if rois.dtype != x.dtype or index.dtype != DataType.INT64:
            raise self.error(f"rois must have X's type and batch_indices be int64, got "
                             f"{rois.dtype.short} and {index.dtype.short}")
        shape = self._shape(x.shape, rois.shape, index.shape)
        return fold(self, inputs, [TensorInfo(x.dtype, shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x, rois, index = inputs
        assert x is not None and rois is not None and index is not None
        out = np.empty(self._shape(x.shape, rois.shape, index.shape), np.float64)
        if ((index < 0) | (index >= x.shape[0])).any():
            raise self.error(f"batch_indices {index.tolist()} must be below N={x.shape[0]}")
        for r, (roi, batch) in enumerate(zip(rois, index, strict=True)):
            out[r] = self._one(x[batch].astype(np.float64), *self._region(roi))
        return [out.astype(x.dtype)]

    def _region(self, roi: np.ndarray) -> tuple[np.ndarray, float, float]:
        """Return the region's scaled (x1, y1) and its width and height, computed in the
        rois' own type as onnxruntime does (the sampling grid's size depends on them)."""
        kind = roi.dtype.type
        start = roi * kind(self.scale) - kind(0.5 if self.half_pixel else 0.0)
        width, height = start[2] - start[0], start[3] - start[1]
        if not self.half_pixel:
            width, height = max(width, kind(1.0)), max(height, kind(1.0))
        return start.astype(np.float64), float(width), float(height)

    def _one(self, image: np.ndarray, start: np.ndarray, width: float, height: float
             ) -> np.ndarray:
        """Return the (C, output_height, output_width) bins of one region of `image`."""
        grid_h = self.ratio or int(np.ceil(height / self.out_h))
        grid_w = self.ratio or int(np.ceil(width / self.out_w))
        yl, yh, wy_lo, wy_hi, y_in = _axis_samples(start[1], height, self.out_h, grid_h,
                                                   image.shape[1])
        xl, xh, wx_lo, wx_hi, x_in = _axis_samples(start[0], width, self.out_w, grid_w,
                                                   image.shape[2])
        inside = (y_in[:, None] & x_in[None, :]).astype(np.float64)
        corners = [image[:, ys[:, None], xs[None, :]] * (wy[:, None] * wx[None, :] * inside)
                   for ys, wy in ((yl, wy_lo), (yh, wy_hi)) for xs, wx in ((xl, wx_lo), (xh, wx_hi))]
        c = image.shape[0]
        if self.mode == "avg":
            total = sum(corners).reshape(c, self.out_h, grid_h, self.out_w, grid_w)
            return np.asarray(total.sum(axis=(2, 4)) / max(grid_h * grid_w, 1))
        top = np.maximum.reduce(corners).reshape(c, self.out_h, grid_h, self.out_w, grid_w)
        return np.asarray(top.max(axis=(2, 4)))


OPS = (RoiAlign,)
