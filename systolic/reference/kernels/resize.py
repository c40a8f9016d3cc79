"""Nearest, linear and cubic resampling along axes, with the coordinate rules of ONNX Resize.

Each output index x of an axis maps to a coordinate in the input; the mapping is computed in
float32 as onnxruntime does, so that nearest-neighbour choices on rounding boundaries agree.
Resampling is separable: an N-D resize is one 1-D resize per axis.
"""

from collections.abc import Sequence

import numpy as np

__all__ = ["COORDINATE_MODES", "NEAREST_MODES", "resize"]

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
"""`simple` is the rule of Resize-10 and Upsample: truncate when enlarging, round up when
shrinking."""


def _coordinates(mode: str, size_in: int, size_out: int, scale: np.float32,
                 roi: tuple[float, float]) -> np.ndarray:  # fmt: skip
    """Return the float32 input coordinate of every output index along one axis."""
    x = np.arange(size_out, dtype=np.float32)
    half, one = np.float32(0.5), np.float32(1)
    if mode == "asymmetric":
        return x / scale
    if mode == "half_pixel":
        return (x + half) / scale - half
    if mode == "pytorch_half_pixel":
        return (x + half) / scale - half if size_out > 1 else np.zeros_like(x)
    if mode == "tf_half_pixel_for_nn":
        return (x + half) / scale
    if mode == "align_corners":
        if size_out == 1:
            return np.zeros_like(x)
        return x * np.float32(size_in - 1) / np.float32(size_out - 1)
    if mode == "half_pixel_symmetric":
        adjustment = np.float32(size_out) / (scale * np.float32(size_in))
        offset = np.float32(size_in) / np.float32(2) * (one - adjustment)
        return offset + (x + half) / scale - half
    assert mode == "tf_crop_and_resize"
    start, end = np.float32(roi[0]), np.float32(roi[1])
    span = np.float32(size_in - 1)
    if size_out == 1:
        return np.full_like(x, half * (start + end) * span)
    return start * span + x * (end - start) * span / np.float32(size_out - 1)


def _nearest_index(coords: np.ndarray, rule: str, shrinking: bool) -> np.ndarray:
    wide = coords.astype(np.float64)  # x +- 0.5 exactly
    if rule == "simple":
        rule = "ceil" if shrinking else "floor"
    if rule == "round_prefer_floor":
        index = np.ceil(wide - 0.5)
    elif rule == "round_prefer_ceil":
        index = np.floor(wide + 0.5)
    elif rule == "floor":
        index = np.floor(wide)
    else:
        index = np.ceil(wide)
    return index.astype(np.int64)


def _cubic_weights(t: np.ndarray, a: float) -> np.ndarray:
    """The four Keys cubic weights (taps at floor - 1 .. floor + 2) of fractions `t`, with
    coefficient `a` (ONNX's cubic_coeff_a: -0.75 as PyTorch, -0.5 as TensorFlow), float64."""
    d = np.stack([t + 1, t, 1 - t, 2 - t], axis=-1)  # distances to the four taps
    near = ((a + 2) * d - (a + 3)) * d * d + 1  # |d| <= 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a  # 1 < |d| < 2
    return np.asarray(np.where(d <= 1, near, far))


def _cubic_axis(data: np.ndarray, axis: int, coords: np.ndarray, a: float,
                exclude_outside: bool) -> np.ndarray:  # fmt: skip
    """Cubic interpolation along `axis`: taps outside the input take the edge value, or with
    `exclude_outside` weigh 0 and the others are renormalized (ONNX Resize)."""
    size_in = data.shape[axis]
    wide = coords.astype(np.float64)
    base = np.floor(wide).astype(np.int64)
    weights = _cubic_weights(wide - base, a)
    taps = base[:, None] + np.arange(-1, 3)[None, :]
    if exclude_outside:
        weights = np.where((taps < 0) | (taps >= size_in), 0.0, weights)
        weights = weights / weights.sum(axis=1, keepdims=True)
    taps = np.clip(taps, 0, size_in - 1)
    shape = [1] * data.ndim
    shape[axis] = -1
    result = np.zeros(0)
    for k in range(4):
        term = np.take(data, taps[:, k], axis=axis) * weights[:, k].reshape(shape)
        result = term if k == 0 else result + term
    return np.asarray(result)


def _resize_axis(data: np.ndarray, axis: int, coords: np.ndarray, mode: str, nearest: str,
                 shrinking: bool, cubic: tuple[float, bool]) -> np.ndarray:  # fmt: skip
    size_in = data.shape[axis]
    if mode == "cubic":
        return _cubic_axis(data, axis, coords, *cubic)
    if mode == "nearest":
        index = np.clip(_nearest_index(coords, nearest, shrinking), 0, size_in - 1)
        return np.asarray(np.take(data, index, axis=axis))
    clamped = np.clip(coords, 0, size_in - 1)
    low = np.minimum(np.floor(clamped).astype(np.int64), size_in - 1)
    high = np.minimum(low + 1, size_in - 1)
    weight = (clamped - low).astype(np.float64)
    shape = [1] * data.ndim
    shape[axis] = -1
    weight = weight.reshape(shape)
    lower, upper = np.take(data, low, axis=axis), np.take(data, high, axis=axis)
    return np.asarray(lower * (1 - weight) + upper * weight)


def resize(
    x: np.ndarray,
    out_shape: Sequence[int],
    scales: Sequence[np.float32],
    *,
    mode: str,
    coordinate_mode: str,
    nearest_mode: str = "round_prefer_floor",
    roi: Sequence[tuple[float, float]] | None = None,
    extrapolation_value: float = 0.0,
    cubic_coeff_a: float = -0.75,
    exclude_outside: bool = False,
) -> np.ndarray:
    """Return `x` resampled to `out_shape`.

    `scales` are the float32 per-axis factors (output over input unless given otherwise);
    `mode` is "nearest", "linear" (n-linear over every resized axis, computed in float64) or
    "cubic" (float x only; Keys cubic of `cubic_coeff_a` per resized axis, float64, taps
    outside the input at the edge value or, with `exclude_outside`, dropped and the weights
    renormalized);
    `roi` gives (start, end) per axis for tf_crop_and_resize, whose coordinates outside the
    input take `extrapolation_value`. A nearest index outside the input is clamped to it.
    Integer `x` resampled linearly: the float64 result truncated toward zero (onnxruntime's
    cast).
    """
    result = x.astype(np.float64) if mode in ("linear", "cubic") else x
    outside = np.zeros(tuple(out_shape), dtype=bool)
    for axis, (size_in, size_out) in enumerate(zip(x.shape, out_shape, strict=True)):
        box = roi[axis] if roi is not None else (0.0, 1.0)
        coords = _coordinates(coordinate_mode, size_in, size_out, scales[axis], box)
        if coordinate_mode == "tf_crop_and_resize":
            off = (coords < 0) | (coords > size_in - 1)
            shape = [1] * x.ndim
            shape[axis] = -1
            outside |= off.reshape(shape)
        elif size_in == size_out and np.array_equal(coords, np.arange(size_out)):
            continue
        result = _resize_axis(result, axis, coords, mode, nearest_mode,
                              bool(scales[axis] < 1), (cubic_coeff_a, exclude_outside))
    if coordinate_mode == "tf_crop_and_resize":
        result = np.where(outside, np.asarray(extrapolation_value, result.dtype), result)
    return np.asarray(result).astype(x.dtype, copy=False)
