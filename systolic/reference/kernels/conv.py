"""N-D convolution (1-D, 2-D, 3-D ...) by im2col and one batched matmul per call.

Shared by Conv, ConvInteger and QLinearConv. Integer callers subtract zero points first and
pass the differences; the kernel only multiplies and accumulates.

Layouts are ONNX's: x is [N, C, *spatial], w is [M, C/group, *kernel], pads list all begins
then all ends, and the result is [N, M, *out_spatial].

Inside `reused_scratch()` (the calibration's runs), the im2col matrix of every call is built
in one buffer of the calling thread, grown to the largest and freed when the block ends,
instead of fresh memory each call: the values and the products are the same, but the kernel
no longer zeroes hundreds of megabytes of new pages per model run (about a quarter of the
CPU time of a float VGG-19 calibration).
"""

import contextlib
import math
import threading
from collections.abc import Iterator, Sequence

import numpy as np

__all__ = ["conv_nd", "conv_output_shape", "exact_in_float64", "resolve_auto_pad",
           "reused_scratch"]  # fmt: skip

_scratch = threading.local()
"""`buffer`: this thread's reused im2col memory (uint8) inside `reused_scratch()`, else unset."""


@contextlib.contextmanager
def reused_scratch() -> Iterator[None]:
    """Within the block, `conv_nd` calls of this thread build their im2col matrices in one
    reused buffer (freed at the end of the outermost block); results are unchanged."""
    outer = getattr(_scratch, "buffer", None)
    if outer is None:
        _scratch.buffer = np.empty(0, np.uint8)
    try:
        yield
    finally:
        if outer is None:
            del _scratch.buffer


def _empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Return an uninitialised array: fresh, or in the thread's scratch inside
    `reused_scratch()` (valid until the next call)."""
    buffer: np.ndarray | None = getattr(_scratch, "buffer", None)
    if buffer is None:
        return np.empty(shape, dtype)
    size = math.prod(shape) * dtype.itemsize
    if buffer.size < size:
        buffer = _scratch.buffer = np.empty(size, np.uint8)
    return buffer[:size].view(dtype).reshape(shape)

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
"""The values of the ONNX `auto_pad` attribute."""

_FLOAT64_EXACT = 2**53
"""Every integer of magnitude up to 2**53 is a float64; some just above it are not."""


def conv_output_shape(
    in_spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    *,
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """Return the output spatial size of a convolution or pooling window sweep.

    Per axis: (in + pad_begin + pad_end - ((k - 1) * d + 1)) / s + 1, rounded down (or up with
    `ceil_mode`, as pooling allows). A size below 1 is returned as is; callers reject it.
    """
    rank = len(in_spatial)
    out = []
    for i in range(rank):
        span = (kernel[i] - 1) * dilations[i] + 1
        room = in_spatial[i] + pads[i] + pads[rank + i] - span
        if ceil_mode:
            size = -(-room // strides[i]) + 1
            # A window must start inside the input or the begin padding (ONNX and PyTorch).
            if (size - 1) * strides[i] >= in_spatial[i] + pads[i]:
                size -= 1
        else:
            size = room // strides[i] + 1
        out.append(size)
    return tuple(out)


def resolve_auto_pad(
    auto_pad: str,
    in_spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """Return explicit pads (all begins, then all ends) for an `auto_pad` setting.

    NOTSET keeps `pads` (zeros when None); VALID pads nothing; SAME_UPPER and SAME_LOWER pad
    so that out = ceil(in / stride), the odd extra cell going at the end (UPPER) or the
    beginning (LOWER). Raises ValueError for any other `auto_pad`.
    """
    rank = len(in_spatial)
    if auto_pad == "NOTSET":
        return tuple(pads) if pads is not None else (0,) * (2 * rank)
    if auto_pad == "VALID":
        return (0,) * (2 * rank)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"auto_pad must be one of {', '.join(AUTO_PADS)}, not {auto_pad!r}")
    begins, ends = [], []
    for i in range(rank):
        out = -(-in_spatial[i] // strides[i])
        span = (kernel[i] - 1) * dilations[i] + 1
        total = max(0, (out - 1) * strides[i] + span - in_spatial[i])
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return (*begins, *ends)


def exact_in_float64(x: np.ndarray, w: np.ndarray, terms: int) -> bool:
    """Return True when a float64 dot product of `terms` products of integers from `x` and `w`
    is exact, whatever order (or fused multiply-add) the BLAS library sums in.

    Proof: let B = max|x| * max|w| * terms. Every product x_i * w_i is an integer of magnitude
    at most max|x| * max|w| <= B, and every partial sum of any subset of the products is an
    integer of magnitude at most B. When B <= 2**53 all these integers are exactly
    representable in float64 (53-bit significand), so each floating-point multiply and add
    (whose exact result is one of them) is performed without rounding, and the float64 result
    equals the exact integer sum.
    """
    if x.size == 0 or w.size == 0:
        return True
    x_max = max(abs(int(x.min())), abs(int(x.max())))
    w_max = max(abs(int(w.min())), abs(int(w.max())))
    return x_max * w_max * terms <= _FLOAT64_EXACT


def conv_nd(
    x: np.ndarray,
    w: np.ndarray,
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
    acc_dtype: np.dtype | type,
    bias: np.ndarray | None = None,
    out_dtype: np.dtype | type | None = None,
) -> np.ndarray:
    """Return the convolution of x [N, C, *spatial] with w [M, C/group, *kernel] in `acc_dtype`.

    The input is padded with zeros (`pads` in ONNX order: all begins, then all ends); no bias
    is added. For a float `acc_dtype` the products are summed in that type. For an integer
    `acc_dtype` the result is the exact integer sum wrapped (two's complement) to `acc_dtype`,
    as a hardware accumulator of that width would hold it: the sum is computed in float64
    when `exact_in_float64` proves that exact (much faster than numpy's integer matmul), else
    in int64. Raises ValueError when the shapes do not fit together.

    Float `acc_dtype` only: `bias` [M] is added to the sums in `acc_dtype`, and the result is
    then rounded once to `out_dtype` (default `acc_dtype`), both while the result is put in
    [N, M, *out] order (the same values as adding and casting afterwards, without the extra
    passes over the data).
    """
    acc = np.dtype(acc_dtype)
    if acc.kind != "f" and (bias is not None or out_dtype is not None):
        raise ValueError("conv_nd: bias and out_dtype are for a float accumulator only")
    rank = x.ndim - 2
    if rank < 1 or w.ndim != x.ndim:
        raise ValueError(f"conv_nd needs x [N, C, *spatial] and w of the same rank, got "
                         f"{x.shape} and {w.shape}")
    n, c = x.shape[:2]
    m, c_per_group = w.shape[:2]
    kernel = w.shape[2:]
    if group < 1 or c != c_per_group * group or m % group != 0:
        raise ValueError(f"conv_nd: x {x.shape} and w {w.shape} do not fit group={group}")
    if not (len(strides) == len(dilations) == rank and len(pads) == 2 * rank):
        raise ValueError(f"conv_nd: strides, dilations and pads must give {rank} axes")

    if acc.kind == "f":
        compute = acc
    elif acc.kind in "iu":
        terms = c_per_group * int(np.prod(kernel, dtype=np.int64))
        exact = exact_in_float64(x, w, terms)
        compute = np.dtype(np.float64) if exact else np.dtype(np.int64)
    else:
        raise ValueError(f"conv_nd: unsupported accumulator type {acc}")

    out_spatial = conv_output_shape(x.shape[2:], kernel, strides, pads, dilations)
    if any(size < 1 for size in out_spatial):
        raise ValueError(f"conv_nd: the kernel {tuple(kernel)} does not fit the padded input")
    out_count = int(np.prod(out_spatial, dtype=np.int64))
    depth = c_per_group * int(np.prod(kernel, dtype=np.int64))

    # cols[g, C/g * kernel, N * out]: one row per (channel, kernel offset) in w's order.
    cols = _columns(x, kernel, strides, pads, dilations, out_spatial, compute)
    cols = cols.reshape(group, depth, n * out_count)
    weights = w.astype(compute, copy=False).reshape(group, m // group, depth)
    # [g, N * out, M/g]. Both operands are handed to BLAS transposed (no copy): the product
    # has the same operand roles as cols[N * out, depth] @ weights.T, hence every element the
    # same summation order (a float result must not depend on how the operands are laid out).
    rows = cols.transpose(0, 2, 1)
    if m // group == 1 or n * out_count == 1:
        # A matrix-vector product: BLAS sums in an order that depends on the layout; keep
        # the row-major one.
        rows = np.ascontiguousarray(rows)
    result = np.matmul(rows, weights.transpose(0, 2, 1))
    if bias is not None:
        result += bias.astype(compute, copy=False).reshape(group, 1, m // group)
    result = result.reshape(group, n, out_count, m // group).transpose(1, 0, 3, 2)
    if compute == acc:
        final = np.empty((n, group, m // group, out_count), out_dtype or acc)
        final[...] = result
        return final.reshape((n, m, *out_spatial))
    result = np.ascontiguousarray(result).reshape((n, m, *out_spatial))
    if compute.kind == "f":
        result = result.astype(np.int64)
    converted: np.ndarray = result.astype(acc)
    return converted


def _columns(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    out_spatial: Sequence[int],
    compute: np.dtype,
) -> np.ndarray:
    """Return the im2col matrix [C, *kernel, N, *out] in `compute`: element (c, k, n, o) is
    x[n, c] at o * stride + k * dilation - pad_begin, zero outside x.

    Filled one kernel offset at a time from strided slices of x (each a block copy along the
    innermost output axis), converting to `compute` on the way; no padded copy of x is made.
    """
    rank = len(kernel)
    n, c = x.shape[:2]
    cols = _empty((c, *kernel, n, *out_spatial), compute)
    x_by_channel = x.transpose(1, 0, *range(2, 2 + rank))  # [C, N, *spatial], a view
    padded = any(pads)
    if padded:
        cols[...] = 0
    for offset in np.ndindex(*kernel):
        src: list[slice] = []
        dst: list[slice] = []
        for axis in range(rank):
            size, out, stride = x.shape[2 + axis], out_spatial[axis], strides[axis]
            start = offset[axis] * dilations[axis] - pads[axis]
            # Output positions o with 0 <= start + o * stride < size.
            first = -(start // stride) if start < 0 else 0  # ceil(-start / stride)
            last = min(out, (size - 1 - start) // stride + 1) if size - 1 >= start else 0
            if last <= first:
                break
            begin = start + first * stride
            src.append(slice(begin, begin + (last - first - 1) * stride + 1, stride))
            dst.append(slice(first, last))
        else:
            cols[(slice(None), *offset, slice(None), *dst)] = x_by_channel[
                (slice(None), slice(None), *src)]
    return cols
