import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

R = rng(112)
DATA = R.standard_normal((3, 4)).astype(np.float32)
UNIQUE = np.array([[2, 0, 1, 1], [0, 2, 0, 2]], np.int64)
REPEATED = np.array([[1, 1, 1, 0], [1, 2, 1, 0]], np.int64)
UPDATES = R.standard_normal((2, 4)).astype(np.float32)


@pytest.mark.parametrize("opset", [11, 13, 16, 18])
def test_scatter_elements_axis_0(opset):
    check_op("ScatterElements", [DATA, UNIQUE, UPDATES], {"axis": 0}, opset=opset)


def test_scatter_elements_axis_1_negative_int32_indices():
    indices = np.array([[-1, 0], [1, -4], [2, 3]], np.int32)
    check_op("ScatterElements", [DATA, indices, R.standard_normal((3, 2)).astype(np.float32)],
             {"axis": -1}, opset=13)


@pytest.mark.parametrize(("opset", "reduction"), [
    (16, "add"), (16, "mul"), (18, "add"), (18, "mul"), (18, "max"), (18, "min")])
def test_reductions_with_repeated_indices(opset, reduction):
    check_op("ScatterElements", [DATA, REPEATED, UPDATES], {"axis": 0, "reduction": reduction},
             opset=opset)


def test_integer_add_is_exact():
    data = R.integers(-9, 9, (3, 4)).astype(np.int64)
    updates = R.integers(-9, 9, (2, 4)).astype(np.int64)
    check_op("ScatterElements", [data, REPEATED, updates], {"reduction": "add"}, opset=18)


def test_reduction_of_a_later_version_is_refused():
    with pytest.raises(ModelError, match=r"reduction 'max' is not one of this version's "
                                         r"\(none, add, mul\)"):
        make_op("ScatterElements", {"reduction": "max"}, 16)


def test_index_out_of_range():
    with pytest.raises(ModelError, match=r"outside \[-3, 3\) along axis 0"):
        make_op("ScatterElements", {}, 13).run([DATA, UNIQUE + 1, UPDATES])


@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_9_is_scatter_elements(axis):
    indices = UNIQUE if axis == 0 else np.array([[3, 0, 1, 2], [1, 2, 3, 0]], np.int64)
    """onnx's ReferenceEvaluator has no Scatter: ScatterElements-11's result is the oracle."""
    (want,) = check_op("ScatterElements", [DATA, indices, UPDATES], {"axis": axis}, opset=11)
    check_op("Scatter", [DATA, indices, UPDATES], {"axis": axis}, opset=9, expected=[want])
