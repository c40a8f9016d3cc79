"""Repeated-value views and transposes of constants (`constant_layout`)."""

import numpy as np
import pytest

from systolic.ir import DataType, Graph, Model, Tensor, TensorType, ValueInfo
from systolic.mapper.passes.constant_layout import (
    c_contiguous,
    core,
    filled,
    is_repeated,
    spread,
    transposed_copy,
)
from systolic.mapper.passes.quantize_float import quantize_weights


def _repeated(value: float, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.full((1,) * len(shape), value, np.float32), shape)


def test_a_broadcast_view_repeats_and_its_core_keeps_one_element_per_repetition() -> None:
    view = np.broadcast_to(np.arange(3, dtype=np.float32).reshape(1, 3, 1), (4, 3, 5))
    assert is_repeated(view)
    assert core(view).shape == (1, 3, 1)
    np.testing.assert_array_equal(np.broadcast_to(core(view), view.shape), view)


def test_arrays_in_memory_do_not_repeat() -> None:
    plain = np.zeros((4, 3), np.float32)
    assert not is_repeated(plain)
    assert core(plain) is plain
    assert not is_repeated(np.broadcast_to(np.ones((1, 3)), (1, 3)))  # length 1: no repetition


def test_c_contiguous_keeps_a_view_and_lays_out_the_rest() -> None:
    view = _repeated(0.5, (64, 32))
    assert c_contiguous(view) is view
    transposed = np.arange(12, dtype=np.int8).reshape(3, 4).T
    laid_out = c_contiguous(transposed)
    assert laid_out.flags.c_contiguous
    np.testing.assert_array_equal(laid_out, transposed)
    assert c_contiguous(np.array(2.0)).shape == ()  # a scalar stays 0-D


def test_spread_broadcasts_a_smaller_result_and_keeps_a_full_one() -> None:
    small = np.arange(3, dtype=np.int8).reshape(3, 1)
    assert spread(small, (3, 4)).shape == (3, 4)
    full = np.zeros((3, 4), np.int8)
    assert spread(full, (3, 4)) is full


@pytest.mark.parametrize("shape", [(5, 3), (300, 7), (513, 1000)])
def test_transposed_copy_equals_the_transpose(shape: tuple[int, int]) -> None:
    matrix = np.random.default_rng(0).integers(-128, 128, shape).astype(np.int8)
    got = transposed_copy(matrix)
    assert got.flags.c_contiguous and not got.flags.writeable
    np.testing.assert_array_equal(got, matrix.T)
    view = np.broadcast_to(np.int8(3), shape)
    assert transposed_copy(view).shape == shape[::-1] and is_repeated(transposed_copy(view))


@pytest.mark.parametrize("axis", [0, 1])
def test_quantizing_a_repeated_weight_equals_quantizing_it_filled(axis: int) -> None:
    view = _repeated(0.02, (64, 16, 3, 3))
    bias = np.linspace(-3.0, 3.0, view.shape[axis]).astype(np.float32)
    guard = (0.05, 0.01, bias) if axis == 0 else None  # per-channel floors: scales differ
    got, got_scale = quantize_weights(view, axis, guard)
    want, want_scale = quantize_weights(np.ascontiguousarray(view), axis, guard)
    assert is_repeated(got) and not got.flags.writeable
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_scale, want_scale)


def test_filled_fills_only_the_repeated_initializers() -> None:
    view = _repeated(1.5, (8, 8))
    plain = np.arange(4, dtype=np.float32)
    plain.flags.writeable = False
    graph = Graph(name="g", nodes=(), inputs=(),
                  outputs=(ValueInfo("w", TensorType(DataType.FLOAT, (8, 8))),),
                  initializers=(Tensor("w", DataType.FLOAT, view),
                                Tensor("p", DataType.FLOAT, plain)))  # fmt: skip
    model = Model(ir_version=8, opsets=(("", 17),), graph=graph)
    out = filled(model)
    w, p = out.graph.initializers
    assert not is_repeated(w.data) and w.data.flags.c_contiguous and not w.data.flags.writeable
    np.testing.assert_array_equal(w.data, view)
    assert p is model.graph.initializers[1]
    assert filled(out) is out
