"""The fused ops' output stage (`ops/_systolic.py`): its int64 fast path must give exactly the
golden model's `requantize` (Python integers), ties and large shifts included."""

import numpy as np
import pytest

from systolic.ir import Attrs, DataType
from systolic.isa import requant
from systolic.reference.ops._systolic import OutputStage, output_stage, round_shift
from systolic.reference.ops.op_systolic_qmatmul import QMatMul


def stage(dtype, zp, lo, hi):
    attrs = Attrs({"y_type": int(dtype), "y_zero_point": zp, "y_lo": lo, "y_hi": hi,
                   "multiplier": (1,), "shift": (0,)})
    return OutputStage(QMatMul(attrs, 1, "node"))


@pytest.mark.parametrize("dtype", [DataType.INT8, DataType.UINT8])
def test_fast_path_equals_golden_requantize(dtype):
    r = np.random.default_rng(21)
    acc = r.integers(-(2**30), 2**30, (64, 8))
    acc[:4] = [[1], [-1], [3], [-3]]  # ties at small shifts
    bias = r.integers(-(2**29), 2**29, 8)
    mult = r.integers(2**30, 2**31, 8)
    shift = np.array([-31, -1, 0, 1, 5, 12, 20, 31])
    lo, hi = (-128, 127) if dtype == DataType.INT8 else (0, 255)
    st = stage(dtype, 7 if dtype == DataType.INT8 else 135, lo + 2, hi - 3)
    got = output_stage(acc, bias, mult, shift, st, channel_axis=1)
    flip = 128 if dtype == DataType.UINT8 else 0
    want = requant.requantize(acc, bias, mult, shift, st.zero_point - flip, st.lo - flip,
                              st.hi - flip).astype(np.int64) + flip
    np.testing.assert_array_equal(got, want.astype(dtype.numpy))


def test_wide_sums_fall_back_to_the_golden_model():
    st = stage(DataType.INT8, 0, -128, 127)
    acc = np.array([[2**40, -(2**40) - 3]])
    got = output_stage(acc, np.zeros(2, np.int64), [2**30, 2**30], [31, 31], st, channel_axis=1)
    want = requant.requantize(acc, np.zeros(2, np.int64), np.array([2**30] * 2),
                              np.array([31, 31]), 0, -128, 127)
    np.testing.assert_array_equal(got, want)


def test_round_shift_ties_to_even():
    values = np.array([5, 6, 7, -5, -6, -7, 2**61 + 2**40, 3])
    np.testing.assert_array_equal(round_shift(values, np.array([1, 2, 1, 1, 2, 1, 41, 0])),
                                  [2, 2, 4, -2, -2, -4, 2**20, 3])
