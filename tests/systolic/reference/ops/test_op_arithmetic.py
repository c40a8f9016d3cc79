import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

OPS = ["Add", "Sub", "Mul", "Div"]
BROADCASTS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("opset", [7, 13, 14])
@pytest.mark.parametrize(("a_shape", "b_shape"), BROADCASTS)
def test_binary_broadcasts_like_numpy(op_type, opset, a_shape, b_shape):
    r = rng(8)
    a = r.standard_normal(a_shape).astype(np.float32)
    b = (r.standard_normal(b_shape) + 3.0).astype(np.float32)
    check_op(op_type, [a, b], opset=opset)


@pytest.mark.parametrize("op_type", OPS)
def test_binary_int64(op_type):
    r = rng(9)
    a = r.integers(-100, 100, (3, 4), np.int64)
    b = r.integers(1, 9, (4,), np.int64) * np.array([1, -1, 1, -1])
    check_op(op_type, [a, b], opset=14, known=[])


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("opset", [1, 6])
@pytest.mark.parametrize(
    ("b_shape", "attrs", "view"),
    [
        ((2, 3, 4), {}, (2, 3, 4)),
        ((4,), {"broadcast": 1}, (1, 1, 4)),
        ((3,), {"broadcast": 1, "axis": 1}, (1, 3, 1)),
        ((2, 3), {"broadcast": 1, "axis": 0}, (2, 3, 1)),
        ((1,), {"broadcast": 1}, (1, 1, 1)),
    ],
)
def test_binary_legacy_broadcast(op_type, opset, b_shape, attrs, view):
    r = rng(10)
    a = r.standard_normal((2, 3, 4)).astype(np.float32)
    b = (r.standard_normal(b_shape) + 3.0).astype(np.float32)
    fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op_type]
    # onnx's reference has no pre-7 broadcast/axis semantics: numpy on the documented view.
    check_op(op_type, [a, b], attrs, opset=opset, expected=[fn(a, b.reshape(view))])


def test_legacy_without_broadcast_rejects_shape_mismatch():
    op = make_op("Add", {}, 6)
    with pytest.raises(ModelError, match=r"set broadcast=1"):
        op.run([np.zeros((2, 3), np.float32), np.zeros((3,), np.float32)])


@pytest.mark.parametrize("opset", [7, 12, 13, 15])
def test_pow_float(opset):
    r = rng(11)
    a = np.abs(r.standard_normal((3, 4))).astype(np.float32) + 0.1
    b = r.standard_normal((4,)).astype(np.float32)
    check_op("Pow", [a, b], opset=opset)


def test_pow_mixed_types_from_12():
    a = rng(12).standard_normal((3, 4)).astype(np.float32)
    check_op("Pow", [a, np.array([2, 3, 1, 0], np.int64)], opset=15, known=[])


def test_pow_legacy_broadcast():
    a = np.abs(rng(13).standard_normal((2, 3))).astype(np.float32)
    b = np.array([2.0, 0.5, 1.0], np.float32)
    check_op("Pow", [a, b], {"broadcast": 1}, opset=1, expected=[np.power(a, b)])


def test_integer_division_by_zero():
    with pytest.raises(ModelError, match=r"integer division by zero"):
        make_op("Div", {}, 14).run([np.ones(2, np.int32), np.zeros(2, np.int32)])

