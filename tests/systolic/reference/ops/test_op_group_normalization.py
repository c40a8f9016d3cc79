import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

R = rng(113)
X = R.standard_normal((2, 6, 3, 2)).astype(np.float32)


@pytest.mark.parametrize("groups", [1, 2, 3, 6])
def test_group_normalization_18_per_group(groups):
    scale = R.standard_normal(groups).astype(np.float32)
    bias = R.standard_normal(groups).astype(np.float32)
    check_op("GroupNormalization", [X, scale, bias], {"num_groups": groups}, opset=18,
             rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("groups", [1, 3, 6])
@pytest.mark.parametrize("epsilon", [None, 1e-2])
def test_group_normalization_21_per_channel(groups, epsilon):
    scale = R.standard_normal(6).astype(np.float32)
    bias = R.standard_normal(6).astype(np.float32)
    attrs = {"num_groups": groups} | ({} if epsilon is None else {"epsilon": epsilon})
    check_op("GroupNormalization", [X, scale, bias], attrs, opset=21, rtol=1e-4, atol=1e-5)


def test_scale_of_the_wrong_version_is_refused():
    with pytest.raises(ModelError, match=r"must have shape \[6\] \(C\)"):
        make_op("GroupNormalization", {"num_groups": 2}, 21).run(
            [X, np.ones(2, np.float32), np.zeros(2, np.float32)])


def test_groups_must_divide_channels():
    with pytest.raises(ModelError, match=r"C a multiple of num_groups 4"):
        make_op("GroupNormalization", {"num_groups": 4}, 18).run(
            [X, np.ones(4, np.float32), np.zeros(4, np.float32)])
