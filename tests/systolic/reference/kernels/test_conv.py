import itertools

import numpy as np
import pytest

from systolic.reference.kernels import conv as conv_module
from systolic.reference.kernels.conv import (
    conv_nd,
    conv_output_shape,
    exact_in_float64,
    resolve_auto_pad,
)


def _naive_conv(x, w, strides, pads, dilations, group):
    """Direct definition in Python integers (2-D only): the exact oracle."""
    n, _, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x.astype(object), [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])],
                constant_values=0)
    oh, ow = conv_output_shape((h, wd), (kh, kw), strides, pads, dilations)
    y = np.zeros((n, m, oh, ow), dtype=object)
    per_group = m // group
    for b in range(n):
        for o in range(m):
            g = o // per_group
            for i in range(oh):
                for j in range(ow):
                    total = 0
                    for ci in range(cg):
                        for a in range(kh):
                            for e in range(kw):
                                total += int(xp[b, g * cg + ci, i * strides[0] + a * dilations[0],
                                                j * strides[1] + e * dilations[1]]) * int(
                                    w[o, ci, a, e])
                    y[b, o, i, j] = total
    return y


GEOMETRIES = [
    ((1, 4, 6, 5), (6, 2, 3, 2), (1, 2), (1, 0, 2, 1), (2, 1), 2),
    ((2, 3, 5, 5), (4, 3, 2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize(("xs", "ws", "strides", "pads", "dil", "group"), GEOMETRIES)
@pytest.mark.parametrize("acc", [np.int32, np.int64])
def test_integer_conv_is_exact(xs, ws, strides, pads, dil, group, acc):
    r = np.random.default_rng(60)
    x = r.integers(-255, 256, xs).astype(np.int32)
    w = r.integers(-255, 256, ws).astype(np.int32)
    got = conv_nd(x, w, strides=strides, pads=pads, dilations=dil, group=group, acc_dtype=acc)
    assert got.dtype == acc
    np.testing.assert_array_equal(got, _naive_conv(x, w, strides, pads, dil, group).astype(acc))


def test_int64_path_when_float64_would_round():
    r = np.random.default_rng(61)
    x = r.integers(-(2**40), 2**40, (1, 2, 4, 4), dtype=np.int64)
    w = r.integers(-(2**20), 2**20, (3, 2, 2, 2), dtype=np.int64)
    assert not exact_in_float64(x, w, terms=8)
    got = conv_nd(x, w, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1,
                  acc_dtype=np.int64)
    np.testing.assert_array_equal(got, _naive_conv(x, w, (1, 1), (0,) * 4, (1, 1), 1)
                                  .astype(np.int64))


def test_int32_accumulator_wraps_like_hardware():
    x = np.full((1, 1, 1, 2), 2**20, np.int64)
    w = np.full((1, 1, 1, 2), 2**11, np.int64)  # sum = 2**32: wraps to 0 in 32 bits
    got = conv_nd(x, w, strides=(1, 1), pads=(0,) * 4, dilations=(1, 1), group=1,
                  acc_dtype=np.int32)
    np.testing.assert_array_equal(got, np.zeros((1, 1, 1, 1), np.int32))


def test_exact_in_float64_bound():
    x, w = np.array([2**26]), np.array([-(2**26)])
    assert exact_in_float64(x, w, terms=2)
    assert not exact_in_float64(x, w, terms=3)


# in (7, 8), kernel 3x3, strides 2: outputs ceil(in / 2) = (4, 4); total pads per axis are
# (4 - 1) * 2 + 3 - 7 = 2 and (4 - 1) * 2 + 3 - 8 = 1; the odd cell goes last (UPPER) or first.
@pytest.mark.parametrize(("mode", "expected"), [
    ("NOTSET", (0, 0, 0, 0)),
    ("VALID", (0, 0, 0, 0)),
    ("SAME_UPPER", (1, 0, 1, 1)),
    ("SAME_LOWER", (1, 1, 1, 0)),
])
def test_resolve_auto_pad(mode, expected):
    assert resolve_auto_pad(mode, (7, 8), (3, 3), (2, 2), (1, 1)) == expected


def test_resolve_auto_pad_rejects_unknown():
    with pytest.raises(ValueError, match=r"auto_pad must be one of"):
        resolve_auto_pad("SAME", (4,), (3,), (1,), (1,))


def _row_major_im2col_conv(x, w, strides, pads, dilations, group):
    """The float64 product as first written: row-major windows [g, N * out, depth] times the
    transposed weights. The faster kernel must reproduce it bit for bit (the summation order
    of every sum belongs to the reference's results)."""
    rank = x.ndim - 2
    n = x.shape[0]
    m, cg = w.shape[:2]
    kernel = w.shape[2:]
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[rank + i]) for i in range(rank)]
    padded = np.pad(x.astype(np.float64), widths)
    spans = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True))
    view = np.lib.stride_tricks.sliding_window_view(padded, spans,
                                                    axis=tuple(range(2, 2 + rank)))
    win = view[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)
               + tuple(slice(None, None, d) for d in dilations)]
    out = win.shape[2:2 + rank]
    count, depth = int(np.prod(out)), cg * int(np.prod(kernel))
    win = win.reshape((n, group, cg, *out, *kernel))
    order = (1, 0, *range(3, 3 + rank), 2, *range(3 + rank, 3 + 2 * rank))
    cols = win.transpose(order).reshape(group, n * count, depth)
    weights = w.astype(np.float64).reshape(group, m // group, depth)
    y = np.matmul(cols, weights.transpose(0, 2, 1))
    y = y.reshape(group, n, count, m // group).transpose(1, 0, 3, 2)
    return np.ascontiguousarray(y.reshape((n, m, *out)))


FLOAT_GEOMETRIES = [
    # x shape, w shape, strides, pads, dilations, group
    ((1, 3, 32, 32), (16, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1),
    ((1, 64, 14, 14), (96, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((1, 300, 7, 7), (64, 300, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # depth 2700
    ((1, 1024, 7, 7), (40, 1024, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 64, 9, 9), (32, 64, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    ((1, 32, 1, 1), (10, 32, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # one output position
    ((4, 500, 1, 1), (1, 500, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # one output channel
    ((2, 32, 12, 12), (32, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 32),  # depthwise
    ((3, 16, 9, 9), (32, 16, 3, 3), (2, 1), (1, 2, 0, 1), (1, 2), 1),
    ((1, 60, 9, 11), (38, 30, 1, 3), (2, 1), (1, 0, 2, 0), (1, 2), 2),
    ((2, 8, 10), (4, 2, 3), (1,), (1, 1), (1,), 4),
    ((1, 4, 5, 6, 7), (6, 4, 2, 3, 2), (1, 2, 1), (1, 0, 1, 0, 1, 1), (1, 1, 2), 1),
    ((3, 18, 5, 10, 11), (3, 6, 3, 3, 3), (1, 2, 1), (2, 0, 0, 2, 0, 2), (1, 1, 1), 3),
]


@pytest.mark.parametrize(("xs", "ws", "strides", "pads", "dil", "group"), FLOAT_GEOMETRIES)
def test_float64_sums_are_bit_identical_to_row_major_im2col(xs, ws, strides, pads, dil, group):
    r = np.random.default_rng(62)
    x = r.standard_normal(xs).astype(np.float32)
    w = r.standard_normal(ws).astype(np.float32)
    got = conv_nd(x, w, strides=strides, pads=pads, dilations=dil, group=group,
                  acc_dtype=np.float64)
    expected = _row_major_im2col_conv(x, w, strides, pads, dil, group)
    assert got.dtype == np.float64 and got.flags.c_contiguous
    assert got.shape == expected.shape and got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("group", [1, 2])
def test_bias_and_out_dtype_equal_adding_and_rounding_afterwards(group):
    r = np.random.default_rng(63)
    x = r.standard_normal((2, 6, 8, 7)).astype(np.float32)
    w = r.standard_normal((4, 6 // group, 3, 3)).astype(np.float32)
    b = r.standard_normal(4).astype(np.float32)
    geometry = {"strides": (1, 2), "pads": (1, 0, 1, 1), "dilations": (1, 1), "group": group}
    plain = conv_nd(x, w, acc_dtype=np.float64, **geometry)
    expected = (plain + b.astype(np.float64).reshape(1, -1, 1, 1)).astype(np.float32)
    got = conv_nd(x, w, acc_dtype=np.float64, bias=b, out_dtype=np.float32, **geometry)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    assert got.tobytes() == expected.tobytes()


def test_bias_is_refused_for_an_integer_accumulator():
    x = np.ones((1, 1, 2, 2), np.int32)
    with pytest.raises(ValueError, match=r"float accumulator only"):
        conv_nd(x, x, strides=(1, 1), pads=(0,) * 4, dilations=(1, 1), group=1,
                acc_dtype=np.int32, bias=np.zeros(1, np.int32))


def test_kernel_larger_than_padded_input_is_refused():
    x = np.ones((1, 1, 2, 2), np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    with pytest.raises(ValueError, match=r"does not fit the padded input"):
        conv_nd(x, w, strides=(1, 1), pads=(0,) * 4, dilations=(1, 1), group=1,
                acc_dtype=np.float64)


CHUNKED_GEOMETRIES = [
    # x shape, w shape, strides, pads, dilations, group: more than two blocks' worth of
    # output rows once the blocks are made small (odd rows of 37 positions: blocks of 64 rows,
    # the last one short; blocks that start and end inside an image)
    ((4, 4, 40, 37), (8, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 6, 20, 16), (10, 3, 3, 3), (1, 1), (1, 0, 1, 2), (1, 1), 2),  # rows of 16 positions
    ((3, 5, 300), (7, 5, 4), (2,), (3, 0), (1,), 1),  # 1-D: one position per row
    ((1, 3, 9, 8, 8), (4, 3, 3, 3, 3), (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1), 1),
]


@pytest.mark.parametrize(("xs", "ws", "strides", "pads", "dil", "group"), CHUNKED_GEOMETRIES)
def test_blocks_of_output_rows_give_the_single_product_bit_for_bit(
        xs, ws, strides, pads, dil, group, monkeypatch):  # fmt: skip
    monkeypatch.setattr(conv_module, "CHUNK_BYTES", 1)
    monkeypatch.setattr(conv_module, "MIN_POSITIONS", 64)
    r = np.random.default_rng(64)
    x = r.standard_normal(xs).astype(np.float32)
    w = r.standard_normal(ws).astype(np.float32)
    geometry = {"strides": strides, "pads": pads, "dilations": dil, "group": group}
    out = conv_output_shape(xs[2:], ws[2:], strides, pads, dil)
    unit = int(np.prod(out[1:]))
    position_bytes = (xs[1] * int(np.prod(ws[2:])) + ws[0]) * 8
    assert len(conv_module._chunks(xs[0] * out[0], unit, position_bytes, False)) > 2
    got = conv_nd(x, w, acc_dtype=np.float64, **geometry)
    assert got.tobytes() == _row_major_im2col_conv(x, w, strides, pads, dil, group).tobytes()
    integer = r.integers(-128, 128, xs).astype(np.int32), r.integers(-128, 128, ws).astype(
        np.int32)
    exact = conv_nd(*integer, acc_dtype=np.int32, **geometry)
    monkeypatch.setattr(conv_module, "CHUNK_BYTES", 1 << 30)
    np.testing.assert_array_equal(exact, conv_nd(*integer, acc_dtype=np.int32, **geometry))


@pytest.mark.parametrize(("units", "unit"), [(160, 37), (40, 16), (1000, 1), (7, 64), (130, 3)])
def test_blocks_hold_multiples_of_align_positions_and_a_last_of_at_least_half(
        units, unit, monkeypatch):  # fmt: skip
    monkeypatch.setattr(conv_module, "CHUNK_BYTES", 1)
    monkeypatch.setattr(conv_module, "MIN_POSITIONS", 64)
    runs = conv_module._chunks(units, unit, 8, False)
    assert runs[0].start == 0 and runs[-1].stop == units
    assert all(a.stop == b.start for a, b in itertools.pairwise(runs))
    if len(runs) > 1:
        assert all(len(run) * unit % conv_module.ALIGN == 0 for run in runs[:-1])
        assert 2 * len(runs[-1]) >= len(runs[0])
    assert conv_module._chunks(units, unit, 8, True) == [range(units)]  # matrix-vector
