import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng


@pytest.mark.parametrize("opset", [7, 9, 11, 13])
@pytest.mark.parametrize("trans", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("c_shape", [(3, 5), (5,), (1,), (3, 1), ()])
def test_gemm_matches_oracle(opset, trans, c_shape):
    r = rng(3)
    a = r.standard_normal((4, 3) if trans[0] else (3, 4)).astype(np.float32)
    b = r.standard_normal((5, 4) if trans[1] else (4, 5)).astype(np.float32)
    c = r.standard_normal(c_shape).astype(np.float32)
    attrs = {"transA": trans[0], "transB": trans[1], "alpha": 0.5, "beta": 2.0}
    check_op("Gemm", [a, b, c], attrs, opset=opset)


@pytest.mark.parametrize("opset", [11, 13])
def test_gemm_without_c(opset):
    r = rng(4)
    a, b = r.standard_normal((2, 3)).astype(np.float32), r.standard_normal((3, 4)).astype(np.float32)
    check_op("Gemm", [a, b], {"alpha": 1.5}, opset=opset)


@pytest.mark.parametrize("opset", [1, 6])
@pytest.mark.parametrize(("broadcast", "c_shape"), [(0, (3, 5)), (1, (5,)), (1, (3, 5))])
def test_gemm_legacy_broadcast(opset, broadcast, c_shape):
    # The oracle's Gemm-6 ignores beta when broadcast=0, against the spec: compare with numpy.
    r = rng(5)
    a, b = r.standard_normal((3, 4)).astype(np.float32), r.standard_normal((4, 5)).astype(np.float32)
    c = r.standard_normal(c_shape).astype(np.float32)
    attrs = {"broadcast": broadcast, "alpha": 0.5, "beta": 2.0}
    expected = [(0.5 * (a @ b) + 2.0 * c).astype(np.float32)]
    check_op("Gemm", [a, b, c], attrs, opset=opset, expected=expected)


def test_gemm_legacy_without_broadcast_rejects_vector_c():
    op = make_op("Gemm", {}, 6)
    with pytest.raises(ModelError, match=r"C must be \[3, 5\] without broadcast=1"):
        op.run([np.zeros((3, 4), np.float32), np.zeros((4, 5), np.float32),
                np.zeros(5, np.float32)])


def test_gemm_c_required_before_11():
    op = make_op("Gemm", {}, 9)
    with pytest.raises(ModelError, match=r"input C is required before Gemm-11"):
        op.run([np.zeros((3, 4), np.float32), np.zeros((4, 5), np.float32)])
