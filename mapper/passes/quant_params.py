"""Quantization parameters as the fusion passes read them, and the integer constants of the
fused operators computed from them (numeric contract: output stage, element-wise add)."""

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from systolic.ir import DataType, Node
from systolic.isa.requant import (
    MULTIPLIER_BITS,
    SHIFT_MAX,
    SHIFT_MIN,
    MultiplierRangeError,
    quantize_multiplier,
)
from systolic.mapper.passes.graph_tools import attr_float
from systolic.reference.kernels import quant

__all__ = [
    "EIGHT_BIT",
    "INFINITE_SCALE",
    "NotFusable",
    "QuantParams",
    "activation_bounds",
    "add_multipliers",
    "bias_to_int32",
    "effective_weights",
    "output_multipliers",
    "per_tensor_params",
]

EIGHT_BIT = frozenset({DataType.UINT8, DataType.INT8})
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class NotFusable(Exception):
    """A pattern cannot become a systolic op; the message is the reason the report gives."""


@dataclasses.dataclass(frozen=True)
class QuantParams:
    """A per-tensor affine quantization: real = scale * (q - zero_point), q of `dtype`."""

    scale: float  # a float32 value
    zero_point: int
    dtype: DataType

    def same_as(self, other: "QuantParams") -> bool:
        return (self.dtype == other.dtype and self.zero_point == other.zero_point
                and np.float32(self.scale) == np.float32(other.scale))

    def quantize(self, value: float) -> int:
        """QuantizeLinear of one real value (float32 division, ties to even, saturated)."""
        q = quant.quantize(np.array([value], np.float32), np.array(self.scale, np.float32),
                           np.array(self.zero_point), axis=None, dtype=self.dtype.numpy)
        return int(q[0])

    @property
    def range(self) -> tuple[int, int]:
        info = np.iinfo(self.dtype.numpy)
        return int(info.min), int(info.max)


INFINITE_SCALE = (
    "its quantizer calibrated a range with an infinite end (an attention mask's -inf, say), "
    "so every value it dequantizes is NaN or infinite, which no 8-bit code holds; the host "
    "computes it as the file does"
)
"""Why a value of scale inf stays on the host (onnxruntime's static quantization of the
-inf masks in torch's SDPA exports: the file's own attention is NaN there)."""


def per_tensor_params(
    constants: Mapping[str, np.ndarray], scale_name: str, zero_point_name: str | None,
    what: str,
) -> QuantParams:
    """Return the per-tensor parameters of a Q/DQ (or QLinear) scale and zero point input."""
    scale = constants.get(scale_name)
    if scale is None:
        raise NotFusable(f"the {what} scale is not a constant")
    if scale.size != 1:
        raise NotFusable(f"the {what} is quantized per axis (only per tensor is fused)")
    if scale.dtype != np.float32:
        raise NotFusable(f"the {what} scale is {scale.dtype}, not float32")
    value = float(scale.reshape(()))
    if value == math.inf:
        raise NotFusable(f"the {what} scale is inf: {INFINITE_SCALE}")
    if not (math.isfinite(value) and value > 0):
        raise NotFusable(f"the {what} scale {value} is not positive and finite")
    if zero_point_name:
        zp = constants.get(zero_point_name)
        if zp is None:
            raise NotFusable(f"the {what} zero point is not a constant")
        if zp.size != 1:
            raise NotFusable(f"the {what} zero point is per axis")
        dtype = DataType.from_numpy(zp.dtype)
        zero = int(zp.reshape(()))
    else:
        dtype, zero = DataType.UINT8, 0
    if dtype not in EIGHT_BIT:
        raise NotFusable(f"the {what} is {dtype.name.lower()}, not uint8 or int8")
    return QuantParams(value, zero, dtype)


def activation_bounds(
    node: Node | None, constants: Mapping[str, np.ndarray], params: QuantParams
) -> tuple[int, int]:
    """Return (lo, hi) in the output type for an optional Relu or Clip applied before the
    output quantization `params`: Relu clamps at the zero point; Clip's bounds are quantized
    with QuantizeLinear semantics (QuantizeLinear is monotonic, so clamping the quantized value
    equals quantizing the clamped real value)."""
    lo, hi = params.range
    if node is None:
        return lo, hi
    if node.op_type == "Relu":
        return max(lo, params.zero_point), hi
    if node.op_type == "Clip":
        low, high = clip_limits(node, constants)
        if low is not None:
            lo = max(lo, params.quantize(low))
        if high is not None:
            hi = min(hi, params.quantize(high))
        if lo > hi:
            raise NotFusable("the Clip bounds leave no value in the output range")
        return lo, hi
    raise NotFusable(f"{node.op_type} is not a fusable activation")


def clip_limits(node: Node, constants: Mapping[str, np.ndarray]) -> tuple[float | None,
                                                                          float | None]:
    """Return Clip's (min, max), None where absent; raise NotFusable for computed bounds."""
    if node.version and node.version < 11:
        low = attr_float(node, "min", float("nan"))
        high = attr_float(node, "max", float("nan"))
        return (None if math.isnan(low) else low, None if math.isnan(high) else high)
    limits: list[float | None] = []
    for index in (1, 2):
        name = node.inputs[index] if len(node.inputs) > index else ""
        if not name:
            limits.append(None)
            continue
        value = constants.get(name)
        if value is None or value.size != 1:
            raise NotFusable("the Clip bounds are not constant scalars")
        limits.append(float(value.reshape(())))
    return limits[0], limits[1]


def is_activation(node: Node, constants: Mapping[str, np.ndarray]) -> bool:
    """True for a Relu, or a Clip with constant (or absent) bounds."""
    if node.domain != "" or node.op_type not in ("Relu", "Clip"):
        return False
    if node.op_type == "Clip":
        try:
            clip_limits(node, constants)
        except NotFusable:
            return False
    return True


RELATIVE_SCALE_FLOOR = 2.0**-16
"""A weight channel's scale is at least the tensor's largest scale times this: a channel 65,536
times smaller than the largest contributes below its quantization error."""

MULTIPLIER_MARGIN = 2.0**-30
"""x_scale · w_scale / y_scale is kept at least this (4x above 2**-32, the smallest
requantization multiplier the output stage holds)."""

BIAS_LIMIT = 2.0**30
"""|bias| / (x_scale · w_scale) is kept within this (half of int32's range)."""


def weight_scale_floor(peaks: np.ndarray, x_scale: float | None, y_scale: float | None,
                       bias: np.ndarray | None) -> np.ndarray:  # fmt: skip
    """Return the smallest scale each weight channel may take (float64, one per peak), so that
    near-zero channels (|w| down to 1e-40) neither underflow the requantization multiplier nor
    overflow the int32 bias, as onnxruntime's quantizer guards them: relative to the largest
    channel's scale (`RELATIVE_SCALE_FLOOR`); from the input and output scales
    (`MULTIPLIER_MARGIN`); from the bias (`BIAS_LIMIT`). Unknown scales or bias add nothing."""
    floor = np.full(peaks.shape, float(peaks.max(initial=0.0)) / 127.0 * RELATIVE_SCALE_FLOOR)
    if x_scale and y_scale:
        floor = np.maximum(floor, MULTIPLIER_MARGIN * y_scale / x_scale)
    if x_scale and bias is not None and bias.size in (1, peaks.size):
        wanted = np.abs(bias.astype(np.float64)).reshape(-1) / (x_scale * BIAS_LIMIT)
        floor = np.maximum(floor, wanted)
    return floor


def output_multipliers(reals: Sequence[float]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Return per-channel (M, s) of the output stage for real multipliers. A positive one
    below 2**-32 gives (0, 0), as 0 does: |accumulator| <= 2**31, so every product rounds
    to 0 (the zero point), in the model's float semantics as in the output stage."""
    ms, ss = [], []
    for real in reals:
        if 0.0 < float(real) < 2.0 ** -32:  # below the output stage's range: all zero
            ms.append(0)
            ss.append(0)
            continue
        try:
            m, s = quantize_multiplier(float(real))
        except MultiplierRangeError as err:
            raise NotFusable(str(err)) from None
        ms.append(m)
        ss.append(s)
    return tuple(ms), tuple(ss)


def add_multipliers(real_a: float, real_b: float) -> tuple[int, int, int]:
    """Return (M_a, M_b, shift) for QAdd: (M, s) of the larger factor as the output stage
    does, the smaller rounded half to even at the same shift (numeric contract)."""
    swap = abs(real_b) > abs(real_a)
    big, small = (real_b, real_a) if swap else (real_a, real_b)
    try:
        m_big, shift = quantize_multiplier(big)
    except MultiplierRangeError as err:
        raise NotFusable(str(err)) from None
    if not SHIFT_MIN <= shift <= SHIFT_MAX:
        raise NotFusable(f"the add's rescale factor {big} is out of range")
    m_small = round(small * 2.0 ** (MULTIPLIER_BITS + shift))
    if not INT32_MIN <= m_small <= INT32_MAX:
        raise NotFusable("the add's smaller rescale factor does not fit int32")
    return (m_small, m_big, shift) if swap else (m_big, m_small, shift)


def effective_weights(w: np.ndarray, zero_point: np.ndarray | None, axis: int) -> np.ndarray:
    """Return int8 w - zero_point (zero point per tensor or per `axis`; `w` itself when it
    is read-only int8 and nothing is subtracted); raise NotFusable when a difference does
    not fit 8 signed bits (the weight width)."""
    if w.dtype == np.int8 and (zero_point is None or (
            zero_point.size in (1, w.shape[axis]) and not np.any(zero_point))):
        return w.copy() if w.flags.writeable else w  # already the difference
    narrow = w.dtype.itemsize == 1 and (zero_point is None or zero_point.dtype.itemsize == 1)
    wide = np.dtype(np.int16 if narrow else np.int64)  # two bytes' difference fits int16
    diff: np.ndarray = w.astype(wide)
    if zero_point is not None:
        shape = [1] * w.ndim
        if zero_point.size > 1:
            shape[axis] = -1
        diff = diff - zero_point.astype(wide).reshape(shape if zero_point.size > 1 else ())
    if diff.size and (diff.min() < -128 or diff.max() > 127):
        raise NotFusable(
            f"weights minus their zero point span [{int(diff.min())}, {int(diff.max())}], "
            "beyond the 8-bit weight width (use a wider weight_width or symmetric weights)")
    return diff.astype(np.int8)


def bias_to_int32(bias: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Return round_half_to_even(bias / scale) as int32 (float64 arithmetic); raise
    NotFusable when a value does not fit int32."""
    q = np.rint(bias.astype(np.float64) / scale.astype(np.float64))
    if q.size and (q.min() < INT32_MIN or q.max() > INT32_MAX or not np.all(np.isfinite(q))):
        raise NotFusable("the quantized bias does not fit int32")
    return q.astype(np.int32)
