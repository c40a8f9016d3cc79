"""onnxruntime's int16 saturation of uint8 x int8 products: the CPU probe and the detector.

On x86-64 CPUs without VNNI (AVX2 only) onnxruntime's uint8 x int8 integer kernels (MLAS) use
VPMADDUBSW: it multiplies the raw uint8 activations by the raw int8 weights (zero points are
corrected afterwards, from row and column sums) and adds each two adjacent products along K,
k = 2j and 2j + 1, into an int16 with saturation. A pair sum outside [-32768, 32767] is
clipped: MatMulInteger of uint8 [[255, 255]] by int8 [[-128], [-128]] gives -32768 instead of
-65280. The ONNX operators define exact sums, and so does our reference. (uint8 x uint8 and
int8 x int8 products, and ConvInteger, go through other kernels, which do not saturate.)

- `onnxruntime_saturates()`: that probe, run once per process.
- `overflowing_outputs(a, b)` / `pair_sums_overflow(a, b)`: which outputs of the product of
  uint8 `a` [..., R, K] and int8 `b` [..., K, N] have a pair sum beyond int16, or whether any.
- `conv_overflows(x, w, x_zero_point, ...)`: the same for a convolution, K ordered as
  onnxruntime's QLinearConv orders it (NHWC: kernel position, then input channel within the
  group; the padding holds x's zero point). Its depthwise kernel (one input and one output
  channel per group) does not pair products and never saturates.
"""

import functools
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from systolic.errors import SimulationError
from systolic.proto import DataType, ModelProto, ValueInfoProto

__all__ = [
    "conv_overflows",
    "onnxruntime_saturates",
    "overflowing_outputs",
    "pair_sums_overflow",
]

INT16_MAX = 32767
"""A pair sum overflows when it is above this or below -INT16_MAX - 1."""

_CHUNK = 1 << 22
"""Pair sums held at once (int32): bounds the memory of one step."""


def onnxruntime_saturates() -> bool:
    """True when this CPU's onnxruntime saturates uint8 x int8 int16 pair sums; False when it
    does not, or is not installed. The probe runs once per process."""
    return _probe()


@functools.cache
def _probe() -> bool:
    from systolic.simulation.onnxruntime_check import onnxruntime_available, run_onnxruntime

    if not onnxruntime_available():
        return False
    feeds = {"a": np.array([[255, 255]], np.uint8), "b": np.array([[-128], [-128]], np.int8)}
    try:
        y = run_onnxruntime(_probe_model(), feeds)["y"]
    except SimulationError:
        return False
    return int(np.asarray(y).reshape(-1)[0]) != -65280


def _probe_model() -> bytes:
    """A MatMulInteger of a uint8 [1, 2] by an int8 [2, 1]: inputs a, b; output y."""
    model = ModelProto(ir_version=7)
    model.opset_import.add(domain="", version=10)
    model.graph.name = "probe"
    model.graph.node.add(op_type="MatMulInteger", input=["a", "b"], output=["y"])
    _declare(model.graph.input.add(), "a", DataType.UINT8, (1, 2))
    _declare(model.graph.input.add(), "b", DataType.INT8, (2, 1))
    _declare(model.graph.output.add(), "y", DataType.INT32, (1, 1))
    return model.SerializeToString()


def _declare(info: ValueInfoProto, name: str, dtype: int, dims: Sequence[int]) -> None:
    info.name = name
    info.type.tensor_type.elem_type = dtype
    for size in dims:
        info.type.tensor_type.shape.dim.add(dim_value=size)


def overflowing_outputs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return which outputs of `a @ b` (numpy's matmul shapes: batch axes broadcast, 1-D
    operands are vectors) have a pair sum a[r, 2j]·b[2j, n] + a[r, 2j+1]·b[2j+1, n] outside
    int16 (a uint8, b int8, raw values)."""
    mask = _batched(a[None] if a.ndim == 1 else a, b[:, None] if b.ndim == 1 else b)
    if b.ndim == 1:
        mask = mask[..., 0]
    if a.ndim == 1:
        mask = mask[..., 0] if b.ndim == 1 else mask[..., 0, :]
    return mask


def _batched(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a3 = np.broadcast_to(a, (*batch, *a.shape[-2:])).reshape(-1, *a.shape[-2:])
    b3 = np.broadcast_to(b, (*batch, *b.shape[-2:])).reshape(-1, *b.shape[-2:])
    masks = [_matrix_mask(x, w) for x, w in zip(a3, b3, strict=True)]
    shape = (*batch, a.shape[-2], b.shape[-1])
    return np.stack(masks).reshape(shape) if masks else np.zeros(shape, bool)


def pair_sums_overflow(a: np.ndarray, b: np.ndarray) -> bool:
    """True when some output of `a @ b` has a pair sum outside int16 (`overflowing_outputs`)."""
    return bool(np.any(overflowing_outputs(a, b)))


def _matrix_mask(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[R, N] mask for one uint8 [R, K] by int8 [K, N] product (pairs 2j, 2j+1 of K)."""
    rows, (depth, cols) = a.shape[0], b.shape
    mask = np.zeros((rows, cols), bool)
    if depth % 2:
        a = np.concatenate([a, np.zeros((rows, 1), a.dtype)], axis=1)
        b = np.concatenate([b, np.zeros((1, cols), b.dtype)], axis=0)
    a0, a1 = a[:, 0::2].astype(np.int32), a[:, 1::2].astype(np.int32)
    b0, b1 = b[0::2].astype(np.int32), b[1::2].astype(np.int32)
    # Only pairs whose largest possible sum leaves int16 can overflow.
    bound = a0.max(0, initial=0) * np.abs(b0).max(1, initial=0) + a1.max(
        0, initial=0) * np.abs(b1).max(1, initial=0)  # fmt: skip
    keep = bound > INT16_MAX
    if not keep.any():
        return mask
    a0, a1, b0, b1 = a0[:, keep], a1[:, keep], b0[keep], b1[keep]
    step = max(1, _CHUNK // (a0.shape[1] * cols))
    for start in range(0, rows, step):
        part = slice(start, start + step)
        sums = a0[part, :, None] * b0 + a1[part, :, None] * b1
        mask[part] = ((sums > INT16_MAX) | (sums < -INT16_MAX - 1)).any(axis=1)
    return mask


def conv_overflows(
    x: np.ndarray,
    w: np.ndarray,
    x_zero_point: int,
    *,
    group: int = 1,
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
) -> bool:
    """True when onnxruntime's uint8 x int8 convolution of raw `x` [N, C, *spatial] by raw
    `w` [M, C/group, *kernel] has a pair sum outside int16. `pads` are explicit (all begins,
    then all ends; auto_pad resolved by the caller)."""
    m, c_group = w.shape[:2]
    if c_group == 1 and m == group:
        return False  # onnxruntime's depthwise kernel: exact int32 sums
    rank = w.ndim - 2
    rows = _conv_rows(x, x_zero_point, w.shape[2:], strides or (1,) * rank,
                      pads or (0,) * (2 * rank), dilations or (1,) * rank)  # fmt: skip
    m_group = m // group
    depth = int(np.prod(w.shape[2:], dtype=np.int64)) * c_group
    for g in range(group):
        a = rows[..., g * c_group : (g + 1) * c_group].reshape(-1, depth)
        kernel = w[g * m_group : (g + 1) * m_group]
        b = np.moveaxis(kernel, 1, -1).reshape(m_group, -1).T  # K = (*kernel, channel)
        if _matrix_mask(a, b).any():
            return True
    return False


def _conv_rows(
    x: np.ndarray,
    x_zero_point: int,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> np.ndarray:
    """Return the windows of `x` padded with `x_zero_point` as [N, *out, *kernel, C]."""
    rank = len(kernel)
    widths = [(0, 0), (0, 0), *zip(pads[:rank], pads[rank:], strict=True)]
    padded = np.pad(x, widths, constant_values=x_zero_point)
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    windows = sliding_window_view(padded, spans, axis=tuple(range(2, 2 + rank)))
    index = (slice(None), slice(None), *(slice(None, None, s) for s in strides),
             *(slice(None, None, d) for d in dilations))  # fmt: skip
    return np.asarray(windows[index]).transpose(0, *range(2, 2 + 2 * rank), 1)
