import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

R = rng(91)


def _f(*shape: int) -> np.ndarray:
    return R.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(("equation", "shapes"), [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("bij, bjk -> bik", [(2, 3, 4), (2, 4, 2)]),
    ("...i->...", [(2, 3, 4)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
])
def test_einsum_float(equation, shapes):
    check_op("Einsum", [_f(*s) for s in shapes], {"equation": equation}, opset=13,
             rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64])
def test_einsum_integers_are_exact(dtype):
    a = R.integers(-50, 50, (3, 4)).astype(dtype)
    b = R.integers(-50, 50, (4, 2)).astype(dtype)
    check_op("Einsum", [a, b], {"equation": "ij,jk->ik"}, opset=12)


def test_einsum_folds_known_inputs():
    from ..oracle import run_ours
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    _, infos = run_ours("Einsum", [a], {"equation": "ij->j"}, 12)
    np.testing.assert_array_equal(infos[0].value, a.sum(0))


@pytest.mark.parametrize(("equation", "shapes", "message"), [
    ("ij,jk->ik", [(3, 4), (5, 6)], r"label 'j' has sizes 4 and 5"),
    ("ij,jk->ik", [(3, 4)], r"2 input term\(s\) for 1 input"),
    ("ijk->ik", [(3, 4)], r"does not fit an input of shape \[3, 4\]"),
    ("ij->iz", [(3, 4)], r"output labels 'z' appear in no input"),
    ("i.j->i", [(3, 4)], r"misplaced '\.'"),
])
def test_einsum_bad_equations(equation, shapes, message):
    with pytest.raises(ModelError, match=message):
        make_op("Einsum", {"equation": equation}, 12).run([_f(*s) for s in shapes])


def test_einsum_rejects_mixed_and_unsupported_types():
    from systolic.ir import DataType
    from systolic.reference.ops.base import TensorInfo
    op = make_op("Einsum", {"equation": "ij,jk"}, 12)
    with pytest.raises(ModelError, match=r"share one element type"):
        op.infer([TensorInfo(DataType.FLOAT, (2, 2)), TensorInfo(DataType.DOUBLE, (2, 2))])
    with pytest.raises(ModelError, match=r"input 0 has element type bool"):
        op.infer([TensorInfo(DataType.BOOL, (2, 2)), TensorInfo(DataType.BOOL, (2, 2))])
