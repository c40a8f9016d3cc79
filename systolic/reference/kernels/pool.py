"""Pooling windows: strided views of every window of a padded N-D input, for MaxPool and
AveragePool (and their integer variants).

Windows start at o * stride - pad_begin on each axis and take `kernel` cells `dilation` apart.
With ceil_mode the last window may run past the end padding; those cells are filled like
padding but are never counted as part of the window (PyTorch and onnxruntime semantics).
"""

from collections.abc import Sequence

import numpy as np

from systolic.reference.kernels.conv import conv_output_shape

__all__ = ["pool_windows", "window_counts", "window_max"]


def _extended_pads(
    in_spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    out_spatial: Sequence[int],
) -> list[tuple[int, int]]:
    """Return per-axis (begin, end) padding that makes room for every window, ceil mode's
    overshoot included (added at the end)."""
    rank = len(in_spatial)
    widths = []
    for i in range(rank):
        needed = (out_spatial[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
        have = in_spatial[i] + pads[i] + pads[rank + i]
        widths.append((pads[i], pads[rank + i] + max(0, needed - have)))
    return widths


def _window_view(
    padded: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out_spatial: Sequence[int],
) -> np.ndarray:
    rank = len(kernel)
    spans = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True))
    axes = tuple(range(padded.ndim - rank, padded.ndim))
    view = np.lib.stride_tricks.sliding_window_view(padded, spans, axis=axes)
    lead = (slice(None),) * (padded.ndim - rank)
    picks = (
        lead
        + tuple(slice(None, (o - 1) * s + 1, s) for o, s in zip(out_spatial, strides, strict=True))
        + tuple(slice(None, None, d) for d in dilations)
    )
    return view[picks]


def pool_windows(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    *,
    ceil_mode: bool,
    fill: float,
) -> np.ndarray:
    """Return a read-only view [N, C, *out, *kernel] of every pooling window of x [N, C, *in].

    Padding cells (explicit pads and ceil-mode overshoot) hold `fill`: -inf or the type's
    minimum for max pooling, 0 for sums. Raises ValueError when no window fits.
    """
    in_spatial = x.shape[2:]
    out_spatial = conv_output_shape(in_spatial, kernel, strides, pads, dilations,
                                    ceil_mode=ceil_mode)
    if any(size < 1 for size in out_spatial):
        raise ValueError(f"the pooling window {tuple(kernel)} does not fit the padded input")
    widths = _extended_pads(in_spatial, kernel, strides, pads, dilations, out_spatial)
    padded = np.pad(x, [(0, 0), (0, 0), *widths], constant_values=fill)
    return _window_view(padded, kernel, strides, dilations, out_spatial)


def window_max(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    *,
    ceil_mode: bool,
    fill: float,
) -> np.ndarray:
    """Return the maximum of every pooling window of x [N, C, *in] as a new [N, C, *out]
    array of x's type (the windows of `pool_windows`, padding cells holding `fill`).

    Computed as a running np.maximum over the kernel offsets in C order, each a strided slice
    of the padded input: a whole-array operation per offset instead of a reduction over
    tiny window axes. The values are those of the reduction: a maximum of numbers does not
    depend on the order, and NaN propagates either way.
    """
    in_spatial = x.shape[2:]
    out_spatial = conv_output_shape(in_spatial, kernel, strides, pads, dilations,
                                    ceil_mode=ceil_mode)
    if any(size < 1 for size in out_spatial):
        raise ValueError(f"the pooling window {tuple(kernel)} does not fit the padded input")
    widths = _extended_pads(in_spatial, kernel, strides, pads, dilations, out_spatial)
    padded = np.pad(x, [(0, 0), (0, 0), *widths], constant_values=fill)
    result: np.ndarray | None = None
    for offset in np.ndindex(*kernel):
        picks = (slice(None), slice(None)) + tuple(
            slice(k * d, k * d + (o - 1) * s + 1, s)
            for k, d, o, s in zip(offset, dilations, out_spatial, strides, strict=True))
        if result is None:
            result = padded[picks].copy()
        else:
            np.maximum(result, padded[picks], out=result)
    assert result is not None
    return result


def window_counts(
    in_spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    *,
    ceil_mode: bool,
    count_pads: bool,
) -> np.ndarray:
    """Return, for every output position [*out], how many cells its window averages over:
    the input cells it covers, plus the explicit padding cells when `count_pads`
    (AveragePool's count_include_pad). Ceil-mode overshoot past the end padding never counts."""
    rank = len(in_spatial)
    out_spatial = conv_output_shape(in_spatial, kernel, strides, pads, dilations,
                                    ceil_mode=ceil_mode)
    mask = np.ones(tuple(in_spatial), dtype=np.int64)
    explicit = [(pads[i], pads[rank + i]) for i in range(rank)]
    mask = np.pad(mask, explicit, constant_values=1 if count_pads else 0)
    no_pads = (0,) * (2 * rank)
    widths = _extended_pads(mask.shape, kernel, strides, no_pads, dilations, out_spatial)
    mask = np.pad(mask, widths, constant_values=0)
    windows = _window_view(mask, kernel, strides, dilations, out_spatial)
    counts: np.ndarray = windows.sum(axis=tuple(range(rank, 2 * rank)))
    return counts
