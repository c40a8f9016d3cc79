"""Params rows: packing into external bytes and back."""

import numpy as np
import pytest

from systolic.isa.params import ParamsError, pack_params, unpack_params


def test_pack_unpack_round_trip() -> None:
    rng = np.random.default_rng(0)
    bias = rng.integers(-(2**31), 2**31, (3, 5))
    multiplier = rng.integers(-(2**31), 2**31, (3, 5))
    shift = rng.integers(-31, 32, (3, 5))
    data = pack_params(bias, multiplier, shift)
    assert len(data) == 3 * 9 * 5
    # Lane 1 of row 2: bias at byte 4, multiplier at 20 + 4, shift at 40 + 1 of the row.
    row = data[2 * 45 : 3 * 45]
    assert int.from_bytes(row[4:8], "little", signed=True) == bias[2, 1]
    assert int.from_bytes(row[24:28], "little", signed=True) == multiplier[2, 1]
    assert int.from_bytes(row[41:42], "little", signed=True) == shift[2, 1]
    for got, want in zip(unpack_params(data, 5), (bias, multiplier, shift), strict=True):
        np.testing.assert_array_equal(got, want)


def test_out_of_range_params_are_rejected() -> None:
    with pytest.raises(ParamsError, match=r"^params shift must lie in \[-31, 31\]$"):
        pack_params(np.zeros(2), np.zeros(2), np.array([0, 32]))
    with pytest.raises(ParamsError, match=r"^bias, multiplier and shift must have one shape"):
        pack_params(np.zeros(2), np.zeros(3), np.zeros(2))
