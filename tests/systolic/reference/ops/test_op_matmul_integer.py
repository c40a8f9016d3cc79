import numpy as np
import onnx.defs
import pytest

from systolic.reference import registry

from ..oracle import rng, run_ours
from ..ort_oracle import check_ort, saturation_reason

# onnxruntime's CPU kernel takes (uint8|int8) A with (uint8|int8) B, except int8 A x uint8 B.
PAIRS = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]


def ints(r, dtype, shape):
    info = np.iinfo(dtype)
    return r.integers(info.min, info.max + 1, shape).astype(dtype)


def test_since_versions_follow_onnx_schema_history():
    history = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                      if s.name == "MatMulInteger" and s.domain == ""})
    assert registry.versions_of("", "MatMulInteger") == history


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((7, 33), (33, 5)), ((2, 3, 4, 16), (16, 9)), ((17,), (17, 4)), ((3, 1, 5, 8), (2, 8, 6)),
])
def test_matches_onnxruntime(a_type, b_type, a_shape, b_shape):
    r = rng(7)
    a, b = ints(r, a_type, a_shape), ints(r, b_type, b_shape)
    for a_zp, b_zp in ((None, None), (ints(r, a_type, ()), ints(r, b_type, ()))):
        inputs = [a, b] if a_zp is None else [a, b, a_zp, b_zp]
        check_ort("MatMulInteger", inputs, opset=10)


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
def test_per_column_b_zero_point_matches_onnxruntime(a_type, b_type):
    r = rng(8)
    a, b = ints(r, a_type, (6, 40)), ints(r, b_type, (40, 7))
    check_ort("MatMulInteger", [a, b, ints(r, a_type, ()), ints(r, b_type, (7,))], opset=10,
              constant=[3])


@pytest.mark.parametrize(("a_shape", "b_shape"), [((7, 33), (33, 5)), ((2, 3, 4, 16), (16, 9))])
def test_uint8_int8_within_int16_pairs_matches_onnxruntime(a_shape, b_shape):
    # int8 values in [-64, 63]: every pair sum fits int16 (2 * 255 * 64 = 32640), so
    # onnxruntime is exact on every CPU and compared here, with or without VNNI.
    r = rng(10)
    a, b = ints(r, np.uint8, a_shape), ints(r, np.int8, b_shape) // 2
    inputs = [a, b, ints(r, np.uint8, ()), ints(r, np.int8, ())]
    assert saturation_reason("MatMulInteger", inputs) is None
    check_ort("MatMulInteger", inputs, opset=10)


def test_per_row_a_zero_point_is_exact():
    # onnxruntime takes a per-tensor a_zero_point only; the oracle is exact integer math.
    r = rng(9)
    a, b = ints(r, np.uint8, (2, 5, 30)), ints(r, np.int8, (30, 4))
    a_zp, b_zp = ints(r, np.uint8, (5,)), ints(r, np.int8, (4,))
    (y,), _ = run_ours("MatMulInteger", [a, b, a_zp, b_zp], {}, 10)
    want = (a.astype(np.int64) - a_zp[:, None].astype(np.int64)) @ (b.astype(np.int64) - b_zp)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, want)
