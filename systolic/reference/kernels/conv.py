"""N-D convolution (1-D, 2-D, 3-D ...) by im2col and batched matmuls.

Shared by Conv, ConvInteger and QLinearConv. Integer callers subtract zero points first and
pass the differences; the kernel only multiplies and accumulates.

Layouts are ONNX's: x is [N, C, *spatial], w is [M, C/group, *kernel], pads list all begins
then all ends, and the result is [N, M, *out_spatial].

A large convolution is computed a block of output rows at a time (`CHUNK_BYTES` of im2col
matrix, `conv_columns.columns`), so the matrix and the product's rows stay in cache instead
of going through memory twice. Every output element still comes out of the same BLAS product
shape in its depth (K) and its operand roles, in a block that starts at a multiple of
`ALIGN` positions and is at least that long, so its sum is the one a single product gives
(OpenBLAS sums each element in K order, in K blocks set by K alone; only a block of one
position, a matrix-vector product, and an odd position at a block's end take other kernels).
`reused_scratch()` (the calibration's runs) builds every block in one reused buffer.
"""

import math
from collections.abc import Sequence

import numpy as np

from systolic.reference.kernels.conv_columns import columns, converted, reused_scratch

__all__ = ["ALIGN", "CHUNK_BYTES", "MIN_POSITIONS", "conv_nd", "conv_output_shape", "exact_in_float64",
           "resolve_auto_pad", "reused_scratch"]  # fmt: skip

CHUNK_BYTES = 4 << 20
"""Target size of one block's im2col matrix and product; a convolution under two blocks is
one product."""

MIN_POSITIONS = 2048
"""Fewest output positions in a block (BLAS packs the weights again for every block)."""

ALIGN = 64
"""Every block but the last holds a multiple of this many output positions."""

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
    out_count = math.prod(out_spatial)
    per_group, depth = m // group, c_per_group * math.prod(kernel)
    # Both operands are handed to BLAS transposed (no copy): each product has the operand
    # roles of cols[positions, depth] @ weights.T, hence every element the same summation
    # order (a float result must not depend on how the operands are laid out).
    weights = converted(w, compute).reshape(group, per_group, depth).transpose(0, 2, 1)
    offsets = None if bias is None else bias.astype(compute, copy=False).reshape(group, 1, -1)
    # A matrix-vector product: BLAS sums in an order that depends on the layout; keep the
    # row-major one, in a single product.
    vector = per_group == 1 or n * out_count == 1
    final = np.empty((n, group, per_group, out_count),
                     (out_dtype or acc) if compute == acc else compute)  # fmt: skip
    unit = out_count // out_spatial[0]
    position_bytes = (c * math.prod(kernel) + m) * compute.itemsize
    for units in _chunks(n * out_spatial[0], unit, position_bytes, vector):
        cols = columns(x, kernel, strides, pads, dilations, out_spatial, compute, units)
        rows = cols.reshape(group, depth, len(units) * unit).transpose(0, 2, 1)
        if vector:
            rows = np.ascontiguousarray(rows)
        result = np.matmul(rows, weights)  # [g, positions, M/g]
        if offsets is not None:
            result += offsets
        _place(final, result, units.start * unit)
    if compute == acc:
        return final.reshape((n, m, *out_spatial))
    summed = final.reshape((n, m, *out_spatial))
    if compute.kind == "f":
        summed = summed.astype(np.int64)
    wrapped: np.ndarray = summed.astype(acc)
    return wrapped


def _chunks(units: int, unit: int, position_bytes: int, vector: bool) -> list[range]:
    """Split `units` output rows of `unit` positions each (`position_bytes` of im2col matrix
    and product per position) into consecutive runs of about CHUNK_BYTES and at least
    MIN_POSITIONS positions: every run but the last holds a multiple of ALIGN positions, the
    last at least half a run. One run for a matrix-vector product or under two runs' worth."""
    step = ALIGN // math.gcd(unit, ALIGN)  # units per ALIGN-multiple of positions
    positions = max(MIN_POSITIONS, CHUNK_BYTES // position_bytes)
    size = max(1, positions // (unit * step)) * step
    if vector or units < 2 * size:
        return [range(units)]
    starts = list(range(0, units, size))
    if units - starts[-1] < size // 2:
        starts.pop()  # a short tail joins the run before it
    return [range(start, end) for start, end in zip(starts, [*starts[1:], units], strict=True)]


def _place(final: np.ndarray, result: np.ndarray, first: int) -> None:
    """Write `result` [g, positions, M/g] (positions first.. of the flattened [N, *out]) into
    `final` [N, g, M/g, out], one image's part at a time, rounded to final's type first (the
    same values as rounding while transposing, in one contiguous pass)."""
    result = result.astype(final.dtype, copy=False)
    out_count = final.shape[3]
    position, end = first, first + result.shape[1]
    while position < end:
        image, cell = divmod(position, out_count)
        stop = min(end, (image + 1) * out_count)
        final[image, :, :, cell:cell + stop - position] = result[
            :, position - first:stop - first].transpose(0, 2, 1)
        position = stop
