"""`columns`: the im2col matrix of a run of output rows is that run of the whole matrix, for
runs inside one image, across images, with padding, strides and dilations; the padding
cells are zeros even in a reused buffer that held other values."""

import numpy as np
import pytest

from systolic.reference.kernels.conv import conv_output_shape
from systolic.reference.kernels.conv_columns import columns, reused_scratch

GEOMETRIES = [  # x shape, kernel, strides, pads, dilations
    ((3, 2, 7, 6), (3, 2), (1, 2), (1, 0, 2, 1), (2, 1)),
    ((2, 3, 11), (3,), (2,), (2, 1), (1,)),
    ((2, 2, 4, 5, 3), (2, 3, 2), (1, 1, 2), (1, 1, 0, 0, 1, 1), (1, 1, 1)),
]


def _windows(x: np.ndarray, kernel, strides, pads, dilations) -> np.ndarray:
    """The whole im2col matrix [C, *kernel, N, *out] by its definition, cell by cell."""
    rank = len(kernel)
    out = conv_output_shape(x.shape[2:], kernel, strides, pads, dilations)
    cols = np.zeros((x.shape[1], *kernel, x.shape[0], *out))
    for c, *k in np.ndindex(x.shape[1], *kernel):
        for n, *o in np.ndindex(x.shape[0], *out):
            at = [o[i] * strides[i] + k[i] * dilations[i] - pads[i] for i in range(rank)]
            if all(0 <= at[i] < x.shape[2 + i] for i in range(rank)):
                cols[(c, *k, n, *o)] = x[(n, c, *at)]
    return cols


@pytest.mark.parametrize(("xs", "kernel", "strides", "pads", "dil"), GEOMETRIES)
def test_a_run_of_rows_is_that_run_of_the_whole_matrix(xs, kernel, strides, pads, dil):
    x = np.random.default_rng(5).standard_normal(xs).astype(np.float32)
    out = conv_output_shape(xs[2:], kernel, strides, pads, dil)
    whole = _windows(x, kernel, strides, pads, dil)
    flat = whole.reshape(xs[1], *kernel, xs[0] * out[0], *out[1:])
    total = xs[0] * out[0]
    runs = [range(total), range(1, 2), range(out[0] - 1, out[0] + 2), range(2, total)]
    with reused_scratch():
        for units in runs * 2:  # the second time over a buffer that holds other values
            got = columns(x, kernel, strides, pads, dil, out, np.dtype(np.float64), units)
            assert got.dtype == np.float64
            np.testing.assert_array_equal(got, flat[(slice(None),) * (1 + len(kernel))
                                                    + (slice(units.start, units.stop),)])
