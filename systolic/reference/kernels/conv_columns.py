"""The im2col matrix of a convolution, for all its output positions or a run of output rows.

`columns` fills one row per (input channel, kernel offset) and one column per output
position, from strided slices of x (no padded copy of x). `conv_nd` calls it on runs of
output rows ("units": one unit is one image's output row along the first spatial axis,
`prod(out_spatial[1:])` positions), so that a large convolution's matrix is built and
multiplied a cache-sized block at a time.

Inside `reused_scratch()` (the calibration's runs), every matrix is built in one buffer of
the calling thread, grown to the largest and freed when the block ends, instead of fresh
memory each call: the values are the same, but the kernel no longer zeroes new pages per call.
The block also keeps each weight's conversion to the accumulator type (`converted`), made
once for all the runs instead of once per run: inside it, weights must not change.
"""

import contextlib
import math
import threading
from collections.abc import Iterator, Sequence

import numpy as np

__all__ = ["columns", "converted", "reused_scratch"]

_scratch = threading.local()
"""Inside `reused_scratch()`, else unset: `buffer`, this thread's reused im2col memory (uint8);
`kept`, a weight's memory and layout -> (the weight, its conversion) for `converted`."""


@contextlib.contextmanager
def reused_scratch() -> Iterator[None]:
    """Within the block, `columns` calls of this thread build their matrices in one reused
    buffer (freed at the end of the outermost block); results are unchanged."""
    outer = getattr(_scratch, "buffer", None)
    if outer is None:
        _scratch.buffer = np.empty(0, np.uint8)
        _scratch.kept = {}
    try:
        yield
    finally:
        if outer is None:
            del _scratch.buffer, _scratch.kept


def converted(weight: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Return `weight` as `dtype` (itself when it already is). Inside `reused_scratch()` the
    conversion of a read-only weight (an initializer, or a view of one) is made once and kept
    until the block ends, found again by its memory and layout (the array is held, so its
    memory is not reused); its values must not change inside the block."""
    kept: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] | None = getattr(
        _scratch, "kept", None)
    if weight.dtype == dtype or kept is None or weight.flags.writeable:
        return weight.astype(dtype, copy=False)
    key = (weight.__array_interface__["data"][0], weight.shape, weight.strides,
           weight.dtype.str, dtype.str)  # fmt: skip
    if key not in kept:
        kept[key] = (weight, weight.astype(dtype))
    return kept[key][1]


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


def columns(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    out_spatial: Sequence[int],
    compute: np.dtype,
    units: range,
) -> np.ndarray:
    """Return the im2col matrix [C, *kernel, len(units), *out_spatial[1:]] in `compute` for
    the output units `units` (unit u is image u // out_spatial[0], output row
    u % out_spatial[0]): element (c, k, u, o) is x[n, c] at the position's
    o * stride + k * dilation - pad_begin, zero outside x. `units` is a step-1 range.

    Filled one kernel offset at a time from strided slices of x (each a block copy along the
    innermost output axis), converting to `compute` on the way: whole images in one copy,
    a partial image at either end of `units` on its own.
    """
    c, rows = x.shape[1], out_spatial[0]
    cols = _empty((c, *kernel, len(units), *out_spatial[1:]), compute)
    x_by_channel = x.transpose(1, 0, *range(2, x.ndim))  # [C, N, *spatial], a view
    for image, count, first_row, end_row, at in _blocks(units, rows):
        span = count * (end_row - first_row)
        block = cols[(slice(None),) * (1 + len(kernel)) + (slice(at, at + span),)]
        block = block.reshape(c, *kernel, count, end_row - first_row, *out_spatial[1:])
        _fill(block, x_by_channel[:, image:image + count], kernel, strides, pads, dilations,
              out_spatial, first_row)
    return cols


def _blocks(units: range, rows: int) -> Iterator[tuple[int, int, int, int, int]]:
    """Yield (first image, image count, first row, end row, offset in `units`) blocks that
    cover `units` in order: runs of whole images, and a partial image alone (count 1)."""
    unit = units.start
    while unit < units.stop:
        image, row = divmod(unit, rows)
        if row == 0 and units.stop - unit >= rows:
            count = (units.stop - unit) // rows
            yield image, count, 0, rows, unit - units.start
            unit += count * rows
        else:
            end = min(rows, row + units.stop - unit)
            yield image, 1, row, end, unit - units.start
            unit += end - row


def _fill(
    block: np.ndarray,
    x_block: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    out_spatial: Sequence[int],
    first_row: int,
) -> None:
    """Fill `block` [C, *kernel, images, rows, *out_spatial[1:]] with the inputs of output
    rows first_row.. of the images `x_block` [C, images, *spatial], zero where the input lies
    in the padding (only those cells are zeroed: the rest is written once)."""
    bounds = [(first_row, first_row + block.shape[len(kernel) + 2])]
    bounds += [(0, size) for size in out_spatial[1:]]
    for offset in np.ndindex(*kernel):
        slab = block[(slice(None), *offset)]  # [C, images, rows, *out_spatial[1:]]
        src: list[slice] = []
        dst: list[slice] = []
        for axis, (low, high) in enumerate(bounds):
            size, stride = x_block.shape[2 + axis], strides[axis]
            start = offset[axis] * dilations[axis] - pads[axis]
            # Output positions o in [low, high) with 0 <= start + o * stride < size.
            first = max(low, -(start // stride) if start < 0 else 0)  # ceil(-start / stride)
            last = min(high, (size - 1 - start) // stride + 1) if size - 1 >= start else 0
            if last <= first:
                slab[...] = 0
                break
            begin = start + first * stride
            src.append(slice(begin, begin + (last - first - 1) * stride + 1, stride))
            dst.append(slice(first - low, last - low))
        else:
            slab[(slice(None), slice(None), *dst)] = x_block[(slice(None), slice(None), *src)]
            _zero_margins(slab, dst)


def _zero_margins(slab: np.ndarray, filled: Sequence[slice]) -> None:
    """Zero the cells of `slab` [C, images, *out] outside the box `filled` (one slice per
    output axis, step 1)."""
    for axis, part in enumerate(filled):
        extent = slab.shape[2 + axis]
        for margin in (slice(0, part.start), slice(part.stop, extent)):
            if margin.stop > margin.start:
                slab[(slice(None),) * (2 + axis) + (margin,)] = 0
