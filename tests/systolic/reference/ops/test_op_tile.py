import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, rng, run_ours


@pytest.mark.parametrize("opset", [6, 13])
@pytest.mark.parametrize("repeats", [[1, 1, 1], [2, 1, 3], [1, 0, 2]])
def test_tile_matches_oracle(opset, repeats):
    x = rng(72).standard_normal((2, 3, 1)).astype(np.float32)
    check_op("Tile", [x, np.array(repeats, np.int64)], opset=opset)


def test_tile_refuses_a_wrong_repeat_count():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ModelError, match=r"repeats \[2\] must hold one non-negative count"):
        run_ours("Tile", [x, np.array([2], np.int64)], {}, 13)


def test_tile_1_repeats_one_axis():
    x = rng(73).standard_normal((2, 3)).astype(np.float32)
    tiles, axis = np.array(3, np.int64), np.array(1, np.int64)
    check_op("Tile", [x, tiles, axis], opset=1, expected=[np.tile(x, (1, 3))])
