"""Resize and its deprecated predecessor Upsample: nearest and linear resampling, and Resize's
cubic resampling of float tensors (a bicubic position-embedding interpolation: DINOv2).

The output shape must be known before running, so scales, sizes and roi must be constants
(or folded from constants). Antialiased shrinking and cubic resampling of integers are
refused. A linear
Resize of integers (a QOperator export's uint8 Resize) interpolates in float64 and truncates
toward zero, as onnxruntime's CPU kernel casts its float result (onnxruntime sums in float32:
where that sum falls just below a whole number, for non-dyadic weights, it is 1 lower).
"""

from collections.abc import Sequence

import numpy as np

from systolic.errors import UnsupportedError
from systolic.ir import Attrs
from systolic.reference.kernels.resize import COORDINATE_MODES, NEAREST_MODES, resize
from systolic.reference.ops._shared import (
    NUMERIC_TYPES,
    check_type,
    float_attr,
    fold,
    int_attr,
    ints_attr,
    normalize_axis,
    str_attr,
)
from systolic.reference.ops.base import Op, TensorInfo

_ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")

Plan = tuple[tuple[int, ...], list[np.float32], list[tuple[float, float]] | None]
"""(output shape, float32 scale per axis, roi (start, end) per axis or None)."""


def _floats(x: np.ndarray | None) -> tuple[float, ...] | None:
    """An optional float input as a flat tuple; an empty tensor counts as omitted."""
    if x is None or x.size == 0:
        return None
    return tuple(float(v) for v in np.asarray(x, np.float32).reshape(-1))


class _Resample(Op):
    """Shared by Resize and Upsample: attribute checks and the call into the kernel."""

    mode: str
    coordinate_mode: str = "asymmetric"
    nearest_mode: str = "simple"
    extrapolation_value: float = 0.0

    def parse_mode(self) -> None:
        """Read and check the `mode` attribute."""
        self.mode = str_attr(self, "mode", "nearest")
        if self.mode not in ("nearest", "linear", "cubic") or (
                self.mode == "cubic" and self.op_type != "Resize"):
            raise self.error(f"mode {self.mode!r} is not one of nearest, linear"
                             + (", cubic" if self.op_type == "Resize" else ""))
        self.cubic_coeff_a = float_attr(self, "cubic_coeff_a", -0.75)
        self.exclude_outside = bool(int_attr(self, "exclude_outside", 0))

    def plan(self, shape: tuple[int, ...], values: Sequence[np.ndarray | None]) -> Plan:
        """Return the output shape, scales and roi for an input of `shape`, from the values
        of the inputs after X (None for omitted ones)."""
        raise NotImplementedError

    def _values(self, inputs: Sequence[TensorInfo | None]) -> list[np.ndarray | None]:
        values: list[np.ndarray | None] = []
        for position, info in enumerate(inputs[1:], start=1):
            if info is None or info.size == 0:
                values.append(None if info is None else np.zeros(0, np.float32))
                continue
            if info.value is None:
                raise UnsupportedError(
                    f"node {self.node_label!r} (ai.onnx.{self.op_type}:{self.version}): input "
                    f"{position} (roi, scales or sizes) is computed at run time; the reference "
                    "needs static shapes, so make it a constant (for example by "
                    "constant-folding the model)")
            values.append(info.value)
        return values

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        x = inputs[0]
        assert x is not None
        check_type(self, x, NUMERIC_TYPES, "X")
        if self.mode == "cubic" and np.dtype(x.dtype.numpy).kind != "f":
            raise UnsupportedError(
                f"node {self.node_label!r} (ai.onnx.{self.op_type}:{self.version}): mode "
                f"'cubic' of {x.dtype.name} is not implemented by the host reference (float "
                "only); re-export the model with mode 'linear' or 'nearest'")
        out_shape, _, _ = self.plan(x.shape, self._values(inputs))
        return fold(self, inputs, [TensorInfo(x.dtype, out_shape)])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        x = inputs[0]
        assert x is not None
        out_shape, scales, roi = self.plan(x.shape, list(inputs[1:]))
        return [resize(x, out_shape, scales, mode=self.mode, coordinate_mode=self.coordinate_mode,
                       nearest_mode=self.nearest_mode, roi=roi,
                       extrapolation_value=self.extrapolation_value,
                       cubic_coeff_a=self.cubic_coeff_a, exclude_outside=self.exclude_outside)]

    def from_scales(self, shape: tuple[int, ...], scales: Sequence[float]) -> Plan:
        """Return the plan for per-axis scales: each output size is floor(size * scale)."""
        if len(scales) != len(shape):
            raise self.error(f"scales has {len(scales)} values for a rank-{len(shape)} input")
        if any(s <= 0 for s in scales):
            raise self.error(f"scales must be positive, got {list(scales)}")
        factors = [np.float32(s) for s in scales]
        out = tuple(int(np.floor(np.float32(d) * f)) for d, f in zip(shape, factors, strict=True))
        if any(d < 1 for d in out):
            raise self.error(f"scales {list(scales)} shrink input {list(shape)} to nothing")
        return out, factors, None


class Upsample(_Resample):
    """Upsample-1 (height_scale and width_scale of a 4-D input; mode nearest or bilinear), -7
    (scales attribute), -9 and the deprecated -10 (scales input): output size
    floor(size * scale), asymmetric coordinates (x / scale), nearest truncating the coordinate
    or linear over the resized axes. Scales below 1 are refused (the spec allows only
    enlarging)."""

    op_type = "Upsample"
    since_versions = (1, 7, 9, 10)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        if version == 1 and self.attr("mode") == "bilinear":
            self.attrs = Attrs({**dict(attrs), "mode": "linear"})
        self.parse_mode()
        self.scales_attr: tuple[float, ...] | None = None
        if version == 1:
            self.scales_attr = (1.0, 1.0, float_attr(self, "height_scale", 1.0),
                                float_attr(self, "width_scale", 1.0))
        elif version < 9:
            value = self.required_attr("scales")
            if not isinstance(value, tuple):
                raise self.error(f"attribute 'scales' must be a list of floats, got {value!r}")
            numbers = [v for v in value if isinstance(v, (int, float))]
            if len(numbers) != len(value):
                raise self.error(f"attribute 'scales' must be a list of floats, got {value!r}")
            self.scales_attr = tuple(float(v) for v in numbers)

    def plan(self, shape: tuple[int, ...], values: Sequence[np.ndarray | None]) -> Plan:
        scales = self.scales_attr if self.version < 9 else _floats(values[0] if values else None)
        if scales is None:
            raise self.error("the scales input is required")
        if any(s < 1 for s in scales):
            raise self.error(f"scales must be at least 1 (Upsample only enlarges), got "
                             f"{list(scales)}; use Resize to shrink")
        return self.from_scales(shape, scales)


class Resize(_Resample):
    """Resize-10 (scales input; coordinates and nearest rounding as Upsample), -11 (roi,
    scales or sizes; coordinate_transformation_mode, nearest_mode, extrapolation_value), -13
    (optional roi and scales), -18 (axes, keep_aspect_ratio_policy, antialias), -19
    (half_pixel_symmetric).

    Sizes give scales size_out / size_in (float32); keep_aspect_ratio_policy not_larger or
    not_smaller then uses the smallest or largest of them on every listed axis, with sizes
    round(size_in * scale). tf_crop_and_resize samples the roi box [start, end] given as
    fractions of size_in - 1; coordinates outside the input take extrapolation_value. With
    scales the output size is floor(size_in * scale) in every mode, as onnxruntime and onnx's
    evaluator compute it (the spec's text multiplies by the roi length too; neither does).
    """

    op_type = "Resize"
    since_versions = (10, 11, 13, 18, 19)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        self.parse_mode()
        self.axes = ints_attr(self, "axes") if version >= 18 else None
        self.policy = str_attr(self, "keep_aspect_ratio_policy", "stretch")
        if self.policy not in _ASPECT_POLICIES:
            raise self.error(f"keep_aspect_ratio_policy {self.policy!r} is not one of "
                             f"{', '.join(_ASPECT_POLICIES)}")
        self.antialias = bool(int_attr(self, "antialias", 0))
        if version < 11:
            return
        self.coordinate_mode = str_attr(self, "coordinate_transformation_mode", "half_pixel")
        known = COORDINATE_MODES if version >= 19 else tuple(
            m for m in COORDINATE_MODES if m != "half_pixel_symmetric")
        if self.coordinate_mode not in known:
            raise self.error(f"coordinate_transformation_mode {self.coordinate_mode!r} is not "
                             f"one of {', '.join(known)}")
        self.nearest_mode = str_attr(self, "nearest_mode", "round_prefer_floor")
        if self.nearest_mode not in NEAREST_MODES[:-1]:
            raise self.error(f"nearest_mode {self.nearest_mode!r} is not one of "
                             f"{', '.join(NEAREST_MODES[:-1])}")
        self.extrapolation_value = float_attr(self, "extrapolation_value", 0.0)

    def _axes(self, rank: int) -> list[int]:
        if self.axes is None:
            return list(range(rank))
        axes = [normalize_axis(self, a, rank, "axes entry") for a in self.axes]
        if len(set(axes)) != len(axes):
            raise self.error(f"axes {list(self.axes)} repeats an axis")
        return axes

    def plan(self, shape: tuple[int, ...], values: Sequence[np.ndarray | None]) -> Plan:
        rank = len(shape)
        if self.version < 11:
            scales = _floats(values[0] if values else None)
            if scales is None:
                raise self.error("the scales input is required")
            return self._checked(self.from_scales(shape, scales))
        padded = list(values) + [None] * (3 - len(values))
        roi_in, scales_in, sizes_in = padded[:3]
        axes = self._axes(rank)
        scales, sizes = _floats(scales_in), (
            None if sizes_in is None or sizes_in.size == 0
            else tuple(int(v) for v in sizes_in.reshape(-1)))
        if (scales is None) == (sizes is None):
            raise self.error("exactly one of scales and sizes must be given (the other empty "
                             "or omitted)")
        roi = self._roi(rank, axes, _floats(roi_in))
        if scales is not None:
            if len(scales) != len(axes):
                raise self.error(f"scales has {len(scales)} values for {len(axes)} axes")
            full = [1.0] * rank
            for axis, scale in zip(axes, scales, strict=True):
                full[axis] = scale
            out, factors, _ = self.from_scales(shape, full)
            return self._checked((out, factors, roi))
        assert sizes is not None
        if len(sizes) != len(axes) or any(s < 1 for s in sizes):
            raise self.error(f"sizes {list(sizes)} must hold one positive size for each of "
                             f"{len(axes)} axes")
        out_list, factors = list(shape), [np.float32(1)] * rank
        ratios = [np.float32(s) / np.float32(shape[a]) for a, s in zip(axes, sizes, strict=True)]
        if self.policy != "stretch":
            pick = min(ratios) if self.policy == "not_larger" else max(ratios)
            ratios = [pick] * len(axes)
            sizes = tuple(int(np.floor(np.float64(pick) * shape[a] + 0.5)) for a in axes)
        for axis, size, ratio in zip(axes, sizes, ratios, strict=True):
            out_list[axis], factors[axis] = size, np.float32(ratio)
        return self._checked((tuple(out_list), factors, roi))

    def _roi(self, rank: int, axes: list[int],
             roi: tuple[float, ...] | None) -> list[tuple[float, float]] | None:  # fmt: skip
        if self.coordinate_mode != "tf_crop_and_resize":
            return None
        if roi is None or len(roi) != 2 * len(axes):
            raise self.error(f"coordinate_transformation_mode 'tf_crop_and_resize' needs roi "
                             f"with {2 * len(axes)} values (all starts, then all ends)")
        boxes = [(0.0, 1.0)] * rank
        for i, axis in enumerate(axes):
            boxes[axis] = (roi[i], roi[len(axes) + i])
        return boxes

    def _checked(self, plan: Plan) -> Plan:
        out, factors, _ = plan
        if any(d < 1 for d in out):
            raise self.error(f"the output shape {list(out)} is empty")
        if self.antialias and self.mode != "nearest" and any(f < 1 for f in factors):
            raise UnsupportedError(
                f"node {self.node_label!r} (ai.onnx.Resize:{self.version}): antialias=1 when "
                "shrinking is not implemented by the host reference; set antialias=0")
        return plan


OPS = (Resize, Upsample)
