import numpy as np
import pytest

from systolic.errors import UnsupportedError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import make_op, rng
from ..ort_oracle import check_ort, saturation_reason

MS = "com.microsoft"
# onnxruntime: uint8 A with uint8/int8 B, int8 A with int8 B; y of A's type.
PAIRS = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]


def ints(r, dtype, shape):
    info = np.iinfo(dtype)
    return r.integers(info.min, info.max + 1, shape).astype(dtype)


def inputs(r, a_type, b_type, m, k, n, *, trans_a, trans_b, per_column, bias, quantized):
    a = ints(r, a_type, (k, m) if trans_a else (m, k))
    b = ints(r, b_type, (n, k) if trans_b else (k, n))
    a_scale = np.float32(10 ** r.uniform(-3, 0))
    shape = (n,) if per_column else ()
    b_scale = (10 ** r.uniform(-3, 0, shape)).astype(np.float32)
    b_zp = ints(r, b_type, shape)
    c = r.integers(-50000, 50000, bias).astype(np.int32) if bias is not None else None
    y = [np.float32(a_scale * np.max(b_scale) * np.sqrt(k) * 50), ints(r, a_type, ())] \
        if quantized else []
    return [a, a_scale, ints(r, a_type, ()), b, b_scale, b_zp, c, *y]


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 0), (0, 1)])
@pytest.mark.parametrize("bias", [None, (7,), (1, 7), (5, 1), (5, 7)])
@pytest.mark.parametrize("alpha", [1.0, 0.37])
def test_quantized_output_matches_onnxruntime(a_type, b_type, trans_a, trans_b, bias, alpha):
    r = rng(21)
    ins = inputs(r, a_type, b_type, 5, 45, 7, trans_a=trans_a, trans_b=trans_b,
                 per_column=False, bias=bias, quantized=True)
    check_ort("QGemm", ins, {"alpha": alpha, "transA": trans_a, "transB": trans_b},
              opset=13, domain=MS)


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
@pytest.mark.parametrize("quantized", [False, True])
def test_per_column_matches_onnxruntime(a_type, b_type, quantized):
    r = rng(22)
    ins = inputs(r, a_type, b_type, 6, 64, 9, trans_a=0, trans_b=1, per_column=True,
                 bias=(9,), quantized=quantized)
    check_ort("QGemm", ins, {"transB": 1}, opset=13, domain=MS, constant=[3, 4, 5])


@pytest.mark.parametrize("alpha", [1.0, 2.5])
def test_float_output_matches_onnxruntime_exactly(alpha):
    r = rng(23)
    ins = inputs(r, np.uint8, np.int8, 4, 30, 6, trans_a=0, trans_b=0, per_column=False,
                 bias=(6,), quantized=False)
    out = check_ort("QGemm", ins, {"alpha": alpha}, opset=13, domain=MS)
    assert out.dtype == np.float32


@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 0), (0, 1)])
@pytest.mark.parametrize("quantized", [False, True])
def test_uint8_int8_within_int16_pairs_matches_onnxruntime(trans_a, trans_b, quantized):
    # int8 values in [-64, 63]: every pair sum fits int16, so onnxruntime is exact on every
    # CPU and compared here, with or without VNNI.
    r = rng(24)
    ins = inputs(r, np.uint8, np.int8, 5, 45, 7, trans_a=trans_a, trans_b=trans_b,
                 per_column=trans_b == 1, bias=(7,), quantized=quantized)
    ins[3] = ins[3] // 2
    attrs = {"transA": trans_a, "transB": trans_b}
    assert saturation_reason("QGemm", ins, attrs, domain=MS) is None
    check_ort("QGemm", ins, attrs, opset=13, domain=MS, constant=[3, 4, 5])


def test_y_scale_without_zero_point_is_unsupported():
    op = make_op("QGemm", {}, 1, MS)
    f32, u8 = TensorInfo(DataType.FLOAT, ()), TensorInfo(DataType.UINT8, ())
    mat = TensorInfo(DataType.UINT8, (2, 2))
    with pytest.raises(UnsupportedError, match=r"give both y_scale and y_zero_point"):
        op.infer([mat, f32, u8, mat, f32, u8, None, f32])
