import numpy as np
import pytest
from systolic.sim.reference.kernels.conv import (
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
