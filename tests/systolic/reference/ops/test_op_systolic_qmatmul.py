import numpy as np
import pytest

from systolic.errors import ModelError

from .systolic_oracle import matmul, run

SHAPES = [((4, 32), (32, 10)), ((1, 3, 5, 7), (7, 4)), ((9,), (9, 3))]


@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPES)
@pytest.mark.parametrize(("a_type", "y_type"), [(np.uint8, np.uint8), (np.int8, np.int8),
                                                 (np.uint8, np.int8)])
@pytest.mark.parametrize("bias", [False, True])
def test_matches_naive_exact_product(a_shape, b_shape, a_type, y_type, bias):
    r = np.random.default_rng(11)
    ai, yi = np.iinfo(a_type), np.iinfo(y_type)
    a = r.integers(ai.min, ai.max + 1, a_shape).astype(a_type)
    b = r.integers(-128, 128, b_shape).astype(np.int8)
    n = b_shape[1]
    bias_values = r.integers(-40000, 40000, n).astype(np.int32) if bias else None
    attrs = {"a_zero_point": int(r.integers(ai.min, ai.max + 1)),
             "multiplier": tuple(int(v) for v in r.integers(2**30, 2**31, n)),
             "shift": tuple(int(v) for v in r.integers(7, 13, n)),
             "y_zero_point": int(r.integers(yi.min, yi.max + 1)),
             "y_type": 2 if y_type == np.uint8 else 3, "y_lo": int(yi.min) + 1}
    got = run("QMatMul", attrs, a, b, *([bias_values] if bias else []))
    want = matmul(a, b, bias_values, a_zp=attrs["a_zero_point"], mult=attrs["multiplier"],
                  shift=attrs["shift"], y_zp=attrs["y_zero_point"], lo=attrs["y_lo"],
                  hi=int(yi.max), dtype=y_type)
    assert got.dtype == y_type
    np.testing.assert_array_equal(got, want)


def test_hand_computed_product():
    a = np.array([[3, 5]], np.uint8)  # minus zero point 1: [2, 4]
    b = np.array([[1, -2], [3, 4]], np.int8)  # [2*1 + 4*3, 2*-2 + 4*4] = [14, 12]
    bias = np.array([1, -2], np.int32)  # [15, 10]
    attrs = {"a_zero_point": 1, "multiplier": (2**30, 2**30), "shift": (1, 0),
             "y_zero_point": 0, "y_type": 3}
    # 15 / 4 = 3.75 -> 4; 10 / 2 = 5
    np.testing.assert_array_equal(run("QMatMul", attrs, a, b, bias), np.array([[4, 5]], np.int8))


def test_rejects_mismatched_inner_dimension():
    with pytest.raises(ModelError, match=r"must be \[\.\.\., K\] and B \[3, 2\] \[\.\.\., K, N\]"):
        run("QMatMul", {"multiplier": (1, 1), "shift": (0, 0), "y_type": 3},
            np.zeros((2, 4), np.int8), np.zeros((3, 2), np.int8))


BATCHED = [((2, 3, 5), (2, 5, 4)), ((3, 1, 2, 6), (4, 6, 3)), ((6,), (2, 6, 3)),
           ((1, 2, 4, 7), (1, 1, 7, 5)), ((2, 2, 3), (3, 2))]


@pytest.mark.parametrize(("a_shape", "b_shape"), BATCHED)
@pytest.mark.parametrize(("a_type", "b_type"), [(np.uint8, np.uint8), (np.int8, np.int8),
                                                 (np.uint8, np.int8)])
def test_batched_and_computed_b_broadcast_like_numpy(a_shape, b_shape, a_type, b_type):
    r = np.random.default_rng(12)
    ai, bi = np.iinfo(a_type), np.iinfo(b_type)
    a = r.integers(ai.min, ai.max + 1, a_shape).astype(a_type)
    b = r.integers(bi.min, bi.max + 1, b_shape).astype(b_type)
    b_zp = int(r.integers(bi.min, bi.max + 1))  # any zero point of B's type
    n = b_shape[-1]
    attrs = {"a_zero_point": int(r.integers(ai.min, ai.max + 1)), "b_zero_point": b_zp,
             "multiplier": (int(r.integers(2**30, 2**31)),), "shift": (9,),
             "y_zero_point": 3, "y_type": 3}
    got = run("QMatMul", attrs, a, b)
    # oracle: every broadcast batch entry as a naive 2-D product (numpy's rules, by hand)
    a2 = a[None, :] if a.ndim == 1 else a
    batch = np.broadcast_shapes(a2.shape[:-2], b.shape[:-2])
    want = np.zeros((*batch, a2.shape[-2], n), np.int8)
    for index in np.ndindex(*batch):
        a_index = tuple(0 if d == 1 else i for i, d in
                        zip(index[len(index) - (a2.ndim - 2):], a2.shape[:-2]))
        b_index = tuple(0 if d == 1 else i for i, d in
                        zip(index[len(index) - (b.ndim - 2):], b.shape[:-2]))
        centered_b = (b[b_index].astype(np.int64) - b_zp).astype(np.int64)
        want[index] = matmul(a2[a_index], centered_b, None, a_zp=attrs["a_zero_point"],
                             mult=attrs["multiplier"] * n, shift=attrs["shift"] * n,
                             y_zp=3, lo=-128, hi=127, dtype=np.int8)
    if a.ndim == 1:
        want = want[..., 0, :]
    assert got.shape == np.matmul(a.astype(np.int64), b.astype(np.int64)).shape
    np.testing.assert_array_equal(got, want)


def test_rejects_a_b_zero_point_outside_b_type():
    from systolic.ir import Attrs, DataType
    from systolic.reference.ops.base import TensorInfo
    from systolic.reference.ops.op_systolic_qmatmul import QMatMul

    op = QMatMul(Attrs({"b_zero_point": 200, "multiplier": (1,), "shift": (0,), "y_type": 3}),
                 1, "node")  # fmt: skip
    with pytest.raises(ModelError, match=r"b_zero_point 200 is outside the range of i8$"):
        op.infer([TensorInfo(DataType.INT8, (2, 3)), TensorInfo(DataType.INT8, (2, 3, 4))])
