"""`reused_scratch`: conv_nd builds its im2col matrices in one reused buffer inside the block,
with results bit-identical to fresh memory (padded or not, float or integer, any group),
and the buffer is gone after the outermost block."""

import numpy as np
import pytest

from systolic.reference.kernels import conv_columns as conv
from systolic.reference.kernels.conv import conv_nd, reused_scratch

CASES = [  # (x shape, w shape, strides, pads, dilations, group, acc)
    ((2, 4, 9, 9), (6, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, np.float64),
    ((1, 6, 7, 8), (6, 1, 3, 3), (2, 1), (0, 2, 1, 0), (1, 2), 6, np.float64),
    ((1, 3, 12), (4, 3, 5), (1,), (0, 0), (1,), 1, np.float64),
    ((1, 4, 6, 6), (8, 2, 2, 2), (1, 1), (0, 0, 0, 0), (1, 1), 2, np.int32),
]


def _run(case: tuple, rng: np.random.Generator) -> list[np.ndarray]:  # type: ignore[type-arg]
    x_shape, w_shape, strides, pads, dilations, group, acc = case
    integer = np.dtype(acc).kind == "i"
    x = rng.integers(-128, 128, x_shape).astype(np.int32) if integer else (
        rng.standard_normal(x_shape).astype(np.float32))
    w = rng.integers(-128, 128, w_shape).astype(np.int32) if integer else (
        rng.standard_normal(w_shape).astype(np.float32))
    return [conv_nd(x, w, strides=strides, pads=pads, dilations=dilations, group=group,
                    acc_dtype=acc)]  # fmt: skip


def test_results_are_bit_identical_with_the_scratch() -> None:
    fresh = [_run(case, np.random.default_rng(7))[0] for case in CASES]
    with reused_scratch():  # every case twice: the buffer holds the previous call's matrix
        reused = [_run(case, np.random.default_rng(7))[0] for case in CASES * 2]
    for got, want in zip(reused, fresh * 2, strict=True):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


def test_the_scratch_lives_only_inside_the_outermost_block() -> None:
    assert getattr(conv._scratch, "buffer", None) is None
    with reused_scratch():
        _run(CASES[0], np.random.default_rng(1))
        grown = conv._scratch.buffer.size
        assert grown >= 4 * 9 * 2 * 9 * 9 * 8
        with reused_scratch():
            _run(CASES[2], np.random.default_rng(1))
        assert conv._scratch.buffer.size == grown  # the inner block keeps the outer buffer
    assert getattr(conv._scratch, "buffer", None) is None


def test_a_result_never_shares_the_scratch() -> None:
    with reused_scratch():
        (first,) = _run(CASES[0], np.random.default_rng(2))
        kept = first.copy()
        _run(CASES[0], np.random.default_rng(3))
        assert not np.shares_memory(first, conv._scratch.buffer)
    np.testing.assert_array_equal(first, kept)


@pytest.mark.parametrize("case", CASES[:1])
def test_outside_the_block_memory_is_fresh(case: tuple) -> None:  # type: ignore[type-arg]
    _run(case, np.random.default_rng(4))
    assert getattr(conv._scratch, "buffer", None) is None


def test_read_only_weights_are_converted_once_per_block() -> None:
    weight = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)
    weight.flags.writeable = False
    f64 = np.dtype(np.float64)
    outside = conv.converted(weight, f64)
    assert conv.converted(weight, f64) is not outside  # nothing is kept outside the block
    with reused_scratch():
        first = conv.converted(weight, f64)
        assert conv.converted(weight, f64) is first
        assert conv.converted(weight.reshape(2, 12), f64) is not first  # another layout
        assert conv.converted(weight.reshape(2, 3, 2, 2), f64) is first  # a view, same layout
        writable = weight.copy()
        assert conv.converted(writable, f64) is not conv.converted(writable, f64)
        np.testing.assert_array_equal(first, outside)
        assert first.dtype == np.float64
    assert getattr(conv._scratch, "kept", None) is None
