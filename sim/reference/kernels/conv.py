"""N-D convolution (1-D, 2-D, 3-D ...) by im2col and one batched matmul per call.

Shared by Conv, ConvInteger and QLinearConv. Integer callers subtract zero points first and
pass the differences; the kernel only multiplies and accumulates.

Layouts are ONNX's: x is [N, C, *spatial], w is [M, C/group, *kernel], pads list all begins
then all ends, and the result is [N, M, *out_spatial].
"""

from collections.abc import Sequence

import numpy as np

__all__ = ["conv_nd", "conv_output_shape", "exact_in_float64", "resolve_auto_pad"]

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


def _windows(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> np.ndarray:
    """Return a strided view [N, C, *out, *kernel] of the windows of an already padded x."""
    rank = len(kernel)
    spans = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True))
    axes = tuple(range(2, 2 + rank))
    view = np.lib.stride_tricks.sliding_window_view(x, spans, axis=axes)
    picks = (
        (slice(None), slice(None))
        + tuple(slice(None, None, s) for s in strides)
        + tuple(slice(None, None, d) for d in dilations)
    )
    return view[picks]


def conv_nd(
    x: np.ndarray,
    w: np.ndarray,
    *,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
    acc_dtype: np.dtype | type,
) -> np.ndarray:
    """Return the convolution of x [N, C, *spatial] with w [M, C/group, *kernel] in `acc_dtype`.

    The input is padded with zeros (`pads` in ONNX order: all begins, then all ends); no bias
    is added. For a float `acc_dtype` the products are summed in that type. For an integer
    `acc_dtype` the result is the exact integer sum wrapped (two's complement) to `acc_dtype`,
    as a hardware accumulator of that width would hold it: the sum is computed in float64
    when `exact_in_float64` proves that exact (much faster than numpy's integer matmul), else
    in int64. Raises ValueError when the shapes do not fit together.
    """
    acc = np.dtype(acc_dtype)
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

    widths = [(0, 0), (0, 0)] + [(pads[i], pads[rank + i]) for i in range(rank)]
    padded = np.pad(x.astype(compute, copy=False), widths)
    win = _windows(padded, kernel, strides, dilations)  # [N, C, *out, *kernel]
    out_spatial = win.shape[2 : 2 + rank]
    if any(size < 1 for size in out_spatial):
        raise ValueError(f"conv_nd: the kernel {tuple(kernel)} does not fit the padded input")
    out_count = int(np.prod(out_spatial, dtype=np.int64))
    depth = c_per_group * int(np.prod(kernel, dtype=np.int64))

    # cols[g, N * out, C/g * kernel]: one row per output position, in w's (c, *kernel) order.
    win = win.reshape((n, group, c_per_group, *out_spatial, *kernel))
    order = (1, 0, *range(3, 3 + rank), 2, *range(3 + rank, 3 + 2 * rank))
    cols = win.transpose(order).reshape(group, n * out_count, depth)
    weights = w.astype(compute, copy=False).reshape(group, m // group, depth)
    result = np.matmul(cols, weights.transpose(0, 2, 1))  # [g, N * out, M/g]
    result = result.reshape(group, n, out_count, m // group).transpose(1, 0, 3, 2)
    result = result.reshape((n, m, *out_spatial))
    if compute == acc:
        return np.ascontiguousarray(result)
    if compute.kind == "f":
        result = result.astype(np.int64)
    converted: np.ndarray = result.astype(acc)
    return converted
