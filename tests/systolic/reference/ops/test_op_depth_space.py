import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

R = rng(94)


@pytest.mark.parametrize("opset", [1, 11, 13])
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("block", [1, 2, 3])
def test_depth_to_space(opset, mode, block):
    x = R.standard_normal((2, 2 * block * block, 3, 2)).astype(np.float32)
    attrs = {"blocksize": block} | ({"mode": mode} if opset >= 11 else {})
    check_op("DepthToSpace", [x], attrs, opset=opset)


@pytest.mark.parametrize("opset", [1, 13])
@pytest.mark.parametrize("block", [1, 2, 3])
def test_space_to_depth(opset, block):
    x = R.integers(-9, 9, (2, 3, 2 * block, 3 * block)).astype(np.int8)
    check_op("SpaceToDepth", [x], {"blocksize": block}, opset=opset)


def test_space_to_depth_inverts_dcr():
    x = R.standard_normal((1, 2, 4, 6)).astype(np.float32)
    (packed,) = make_op("SpaceToDepth", {"blocksize": 2}, 13).run([x])
    (back,) = make_op("DepthToSpace", {"blocksize": 2, "mode": "DCR"}, 13).run([packed])
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize(("op_type", "shape", "message"), [
    ("DepthToSpace", (1, 6, 2, 2), r"channels 6 are not a multiple of blocksize² 4"),
    ("SpaceToDepth", (1, 6, 3, 2), r"height 3 and width 2 must be multiples of blocksize 2"),
    ("SpaceToDepth", (6, 3, 2), r"must be 4-D"),
])
def test_bad_shapes(op_type, shape, message):
    with pytest.raises(ModelError, match=message):
        make_op(op_type, {"blocksize": 2}, 13).run([np.zeros(shape, np.float32)])


def test_bad_mode():
    with pytest.raises(ModelError, match=r"mode must be 'DCR' or 'CRD', got 'XYZ'"):
        make_op("DepthToSpace", {"blocksize": 2, "mode": "XYZ"}, 13)
