"""Constants of a lowered layer: folded bias, accumulator bound, weight and params images."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.errors import ResourceError, UnsupportedError
from systolic.isa.params import unpack_params
from systolic.mapper.lowering.params_rows import (
    check_accumulator,
    fold_zero_point,
    params_image,
    weight_image,
)


def test_the_zero_point_is_folded_per_column() -> None:
    weights = np.array([[1, -2], [3, 4]])
    folded = fold_zero_point(weights, np.array([10, 20]), 5, "l")
    np.testing.assert_array_equal(folded, [10 - 5 * 4, 20 - 5 * 2])


def test_a_folded_bias_beyond_int32_names_the_layer() -> None:
    weights = np.full((4000, 1), 127)
    with pytest.raises(UnsupportedError, match=r"^layer 'big': the bias with the folded input"):
        fold_zero_point(weights, np.array([2**31 - 10]), -128, "big")


def test_the_accumulator_bound_is_exact() -> None:
    config = ArrayConfig(rows=2, cols=2, acc_width=16)
    # 2 * (-128 * -128) = 32768 > 32767: the largest sum of two products overflows 16 bits
    check_accumulator(np.array([[-128], [127]]), config, "fits")
    with pytest.raises(ResourceError, match=r"^layer 'wide': sums of 2 products can reach 32768"):
        check_accumulator(np.array([[-128], [-128]]), config, "wide")


@pytest.mark.parametrize("acc_width", [18, 20, 22])
def test_the_accumulator_bound_is_the_sum_of_each_terms_extreme(acc_width: int) -> None:
    """Raises exactly when, per column, Σ max(w·x_low, w·x_high) or Σ min(...) leaves acc."""
    config = ArrayConfig(rows=2, cols=2, acc_width=acc_width)
    rng = np.random.default_rng(acc_width)
    for _ in range(20):
        weights = rng.integers(-128, 128, size=(int(rng.integers(1, 40)), 3))
        most = np.maximum(weights * -128, weights * 127).sum(axis=0).max()
        least = np.minimum(weights * -128, weights * 127).sum(axis=0).min()
        limit = 1 << (acc_width - 1)
        if most < limit and least >= -limit:
            check_accumulator(weights, config, "l")
        else:
            with pytest.raises(ResourceError, match=f"can reach {max(most, -least)}, beyond"):
                check_accumulator(weights, config, "l")


def test_weights_are_laid_out_in_column_tiles() -> None:
    config = ArrayConfig(rows=2, cols=2)
    weights = np.arange(15).reshape(3, 5) - 7
    image = np.frombuffer(weight_image(weights, config), np.int8).reshape(3, 3, 2)
    for t in range(3):
        expected = np.zeros((3, 2), np.int64)
        block = weights[:, 2 * t : 2 * t + 2]
        expected[:, : block.shape[1]] = block
        np.testing.assert_array_equal(image[t], expected)


def test_params_rows_hold_one_column_tile_each() -> None:
    config = ArrayConfig(rows=2, cols=2)
    bias, mult, shift = np.array([1, 2, 3]), np.array([4, 5, 6]), np.array([-1, 0, 1])
    got = unpack_params(params_image(bias, mult, shift, config), 2)
    np.testing.assert_array_equal(got[0], [[1, 2], [3, 0]])
    np.testing.assert_array_equal(got[1], [[4, 5], [6, 0]])
    np.testing.assert_array_equal(got[2], [[-1, 0], [1, 0]])
