from fractions import Fraction

import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import Attrs, DataType
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_systolic_qmul import QMul

from .systolic_oracle import round_even


def run(attrs, a, b):
    return QMul(Attrs(attrs), 1, "node").run([a, b])[0]


def oracle(a, b, attrs, dtype):
    """Python integers and exact rationals, element by element (B broadcast by numpy)."""
    a_full, b_full = np.broadcast_arrays(a, b)
    out = []
    for x, y in zip(a_full.reshape(-1).tolist(), b_full.reshape(-1).tolist(), strict=True):
        t = (x - attrs["a_zero_point"]) * (y - attrs["b_zero_point"]) * attrs["multiplier"]
        q = round_even(Fraction(t, 2 ** (31 + attrs["shift"]))) + attrs["y_zero_point"]
        out.append(min(max(q, attrs["y_lo"]), attrs["y_hi"]))
    return np.array(out, dtype).reshape(a.shape)


def random_attrs(r, a_type, b_type, y_type, shift, negative):
    ai, bi, yi = np.iinfo(a_type), np.iinfo(b_type), np.iinfo(y_type)
    m = int(r.integers(2**30, 2**31))
    return {"a_zero_point": int(r.integers(ai.min, ai.max + 1)),
            "b_zero_point": int(r.integers(bi.min, bi.max + 1)),
            "multiplier": -m if negative else m, "shift": shift,
            "y_zero_point": int(r.integers(yi.min, yi.max + 1)),
            "y_type": 2 if y_type == np.uint8 else 3,
            "y_lo": int(yi.min) + 1, "y_hi": int(yi.max) - 1}


@pytest.mark.parametrize(("a_type", "b_type", "y_type"), [
    (np.uint8, np.uint8, np.uint8), (np.int8, np.int8, np.int8), (np.uint8, np.int8, np.int8)])
@pytest.mark.parametrize("shift", [-3, 0, 6, 14])
@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("b_shape", [(2, 3, 4, 5), (2, 3, 1, 1), (1, 3, 1, 1), (5,),
                                     (1, 1, 1, 5)])
def test_matches_the_exact_product_rounded_once(a_type, b_type, y_type, shift, negative,
                                                b_shape):
    r = np.random.default_rng(11)
    attrs = random_attrs(r, a_type, b_type, y_type, shift, negative)
    ai, bi = np.iinfo(a_type), np.iinfo(b_type)
    a = r.integers(ai.min, ai.max + 1, (2, 3, 4, 5)).astype(a_type)
    b = r.integers(bi.min, bi.max + 1, b_shape).astype(b_type)
    got = run(attrs, a, b)
    assert got.dtype == y_type and got.shape == a.shape
    np.testing.assert_array_equal(got, oracle(a, b, attrs, y_type))


def test_hand_computed_product():
    # (a - 10) * (b - 20) * 2**30 / 2**31 = product / 2, ties to even
    a = np.array([13, 11, 10, 15], np.uint8)
    b = np.array([23, 21, 90, 19], np.uint8)
    attrs = {"a_zero_point": 10, "b_zero_point": 20, "multiplier": 2**30, "shift": 0,
             "y_zero_point": 100, "y_type": 2}
    # 9 / 2 = 4.5 -> 4; 1 / 2 -> 0; 0; -5 / 2 = -2.5 -> -2
    np.testing.assert_array_equal(run(attrs, a, b), np.array([104, 100, 100, 98], np.uint8))


def test_infer_accepts_per_channel_b_and_rejects_other_broadcasts():
    op = QMul(Attrs({"multiplier": 1, "shift": 0, "y_type": 3}), 1, "node")
    a = TensorInfo(DataType.INT8, (2, 3, 4, 4))
    out = op.infer([a, TensorInfo(DataType.INT8, (1, 3, 1, 1))])
    assert out[0].shape == (2, 3, 4, 4) and out[0].dtype == DataType.INT8
    with pytest.raises(ModelError, match=r"node 'node'.*B \[1, 1, 4, 4\] must have A's shape"):
        op.infer([a, TensorInfo(DataType.INT8, (1, 1, 4, 4))])


def test_rejects_missing_multiplier_and_bad_shift():
    with pytest.raises(ModelError, match=r"required attribute 'multiplier' is missing"):
        QMul(Attrs({"shift": 0, "y_type": 3}), 1, "node")
    with pytest.raises(ModelError, match=r"shift must lie in \[-31, 31\], got 40"):
        QMul(Attrs({"multiplier": 1, "shift": 40, "y_type": 3}), 1, "node")


def test_rejects_a_zero_point_outside_its_operand_type():
    op = QMul(Attrs({"multiplier": 1, "shift": 0, "y_type": 3, "a_zero_point": 200}), 1,
              "node")
    with pytest.raises(ModelError, match=r"a_zero_point 200 is outside its operand's range"):
        op.infer([TensorInfo(DataType.INT8, (4,)), TensorInfo(DataType.INT8, (4,))])
