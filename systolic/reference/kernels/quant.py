"""Integer arithmetic of linear quantization, shared by the quantized reference operators.

Conventions (the numeric contract the hardware matches):

- Rounding is always round-half-to-even (IEEE "nearest even", numpy's `rint`, x86's default
  `cvtps2dq`), never half away from zero.
- `saturate` clamps to the output type's range; nothing wraps.
- Real numbers are IEEE float32, and every float operation is one correctly rounded float32
  operation in the order written, which is what onnxruntime's CPU kernels (MLAS) do:
  quantize is `rint(x / scale) + zero_point` with a float32 division (ONNX's own wording; not a
  multiplication by a reciprocal, and not float64); requantizing an int32 accumulator is
  `rint(float32(acc) * float32(multiplier)) + zero_point`, where `float32(acc)` itself rounds
  (to nearest even) once |acc| > 2**24.
- The hardware computes the requantization in pure integers instead
  (`systolic.isa.requant`), rounding the exact product once; with a float32 multiplier
  it differs from the float32 formula above by at most one, and only where acc * multiplier
  lies within 2**-24 (relative) of a half-integer.
"""

import numpy as np
import numpy.typing as npt

__all__ = [
    "INTEGER_TYPES",
    "broadcast_param",
    "dequantize",
    "fma_float32",
    "integer_range",
    "quantize",
    "requantize",
    "round_half_to_even",
    "saturate",
]

INTEGER_TYPES = (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.int16))
"""The quantized element types the reference computes with (ONNX's 8- and 16-bit types)."""


def integer_range(dtype: np.dtype | type) -> tuple[int, int]:
    """Return (lowest, highest) value of integer `dtype`."""
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def round_half_to_even(x: np.ndarray) -> np.ndarray:
    """Round to the nearest integer, ties to the even one (2.5 -> 2, -3.5 -> -4); same dtype."""
    return np.asarray(np.rint(x))


def saturate(x: np.ndarray, dtype: np.dtype | type) -> np.ndarray:
    """Clamp integer-valued `x` (integer or float array) to `dtype`'s range and cast to it.

    NaN, which only a float `x` can hold, becomes the lowest value of `dtype` (what onnxruntime's
    vectorised kernels produce: MAXPS returns its second operand for a NaN).
    """
    lo, hi = integer_range(dtype)
    if x.dtype.kind == "f":
        x = np.where(np.isnan(x), lo, x)
        return np.asarray(np.clip(x, lo, hi).astype(dtype))
    return np.asarray(np.clip(x.astype(np.int64, copy=False), lo, hi).astype(dtype))


def broadcast_param(param: np.ndarray, ndim: int, axis: int | None) -> np.ndarray:
    """Return a scale or zero point shaped to broadcast against a rank-`ndim` tensor.

    A scalar or 1-element tensor stays a scalar (per-tensor); a 1-D tensor with `axis` is laid
    along that axis (per-axis). Raises ValueError for any other shape.
    """
    if param.size == 1 and param.ndim <= 1:
        return param.reshape(())
    if param.ndim != 1 or axis is None:
        raise ValueError(f"a scale or zero point must be a scalar or 1-D, got shape {param.shape}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for a rank-{ndim} tensor")
    shape = [1] * ndim
    shape[axis % ndim] = param.size
    return param.reshape(shape)


def quantize(
    x: np.ndarray,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    *,
    axis: int | None,
    dtype: np.dtype | type,
) -> np.ndarray:
    """Return saturate(round_half_to_even(x / scale) + zero_point) in `dtype`.

    `x` is converted to float32 (exact for float16, and for int32 up to 2**24 in magnitude,
    rounding to nearest even beyond), `scale` must be float32. The division is one float32
    division (as ONNX specifies and onnxruntime computes); the zero point is added to the
    rounded integer, so the result does not depend on the float sum. `axis` is None for a
    per-tensor scale, else the axis a 1-D scale and zero point run along.
    """
    x32 = x.astype(np.float32, copy=False)
    s = broadcast_param(np.asarray(scale, dtype=np.float32), x.ndim, axis)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = round_half_to_even(x32 / s).astype(np.float64)
    if zero_point is not None:
        q = q + broadcast_param(zero_point.astype(np.float64), x.ndim, axis)
    return saturate(q, dtype)


def dequantize(
    q: np.ndarray,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    *,
    axis: int | None,
) -> np.ndarray:
    """Return float32 (q - zero_point) * scale.

    The difference is exact in int32 (for the 8-, 16- and 32-bit inputs ONNX allows), then
    converted to float32 (rounding to nearest even beyond 2**24) and multiplied by the float32
    scale in one float32 multiplication, as onnxruntime computes.
    """
    diff = q.astype(np.int64)
    if zero_point is not None:
        diff = diff - broadcast_param(zero_point.astype(np.int64), q.ndim, axis)
    s = broadcast_param(np.asarray(scale, dtype=np.float32), q.ndim, axis)
    return np.asarray(diff.astype(np.int32).astype(np.float32) * s)


def requantize(
    acc: np.ndarray,
    multiplier: npt.ArrayLike,
    zero_point: int | np.ndarray,
    dtype: np.dtype | type,
) -> np.ndarray:
    """Return saturate(round_half_to_even(float32(acc) * multiplier) + zero_point) in `dtype`.

    onnxruntime's requantization of an int32 GEMM or convolution accumulator
    (MlasRequantizeOutput): the int32 `acc` is converted to float32, multiplied by the float32
    `multiplier` (a scalar, or an array broadcasting against `acc` for per-channel scales) in
    one float32 multiplication, rounded half to even, offset by the zero point, saturated.
    """
    a32 = np.asarray(acc).astype(np.int32, copy=False).astype(np.float32)
    m32 = np.asarray(multiplier, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        product = a32 * m32
    rounded = round_half_to_even(product).astype(np.float64)
    return saturate(rounded + np.asarray(zero_point, dtype=np.float64), dtype)


def fma_float32(x: npt.ArrayLike, y: npt.ArrayLike, z: npt.ArrayLike) -> np.ndarray:
    """Return the float32 fused multiply-add x * y + z, rounded once (nearest even).

    Emulated exactly: the product of two float32 values is exact in float64 (48 significand
    bits); the float64 sum s and its exact error e (Knuth's TwoSum) give x * y + z = s + e.
    Rounding s to float32 is correct unless s lies exactly halfway between two float32
    values while e != 0, in which case the sign of e picks the neighbour.
    """
    x64 = np.asarray(x, dtype=np.float32).astype(np.float64)
    y64 = np.asarray(y, dtype=np.float32).astype(np.float64)
    z64 = np.asarray(z, dtype=np.float32).astype(np.float64)
    p = x64 * y64
    s = p + z64
    bp = s - p
    e = (p - (s - bp)) + (z64 - bp)
    r = s.astype(np.float32)
    toward = np.where(s > r.astype(np.float64), np.float32(np.inf), np.float32(-np.inf))
    other = np.nextafter(r, toward.astype(np.float32))
    midpoint = (r.astype(np.float64) + other.astype(np.float64)) / 2
    tie = (s == midpoint) & (e != 0)
    pick = np.where(e > 0, np.maximum(r, other), np.minimum(r, other))
    return np.asarray(np.where(tie, pick, r), dtype=np.float32)
