import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.op_qlinear_softmax import exp_table

from ..oracle import make_op, rng, run_ours
from ..ort_oracle import run_ort

MS = "com.microsoft"

CASES = [
    # (shape, axis, opset attribute): single axis (13) and 2-D coercion (before 13)
    ((1, 10), -1, 13),  # one row
    ((2, 1024), -1, 13),  # a long row
    ((2, 3, 5), 1, 13),  # the axis is not the last one
    ((2, 3, 5), 0, 13),
    ((2, 3, 5), 1, 12),  # rows are the flattened axes 1 and 2
    ((2, 3, 4), 2, 1),
    ((4, 7), None, 13),  # default axis -1
    ((4, 3, 2), None, 12),  # default axis 1
    ((3, 1), -1, 13),  # one-element rows: the ratio overflows float32 for Y_scale 1/256
]


def quant_params(r, dtype, i):
    info = np.iinfo(dtype)
    x_scale = np.float32(10 ** r.uniform(-3, 0))
    y_scale = np.float32(1 / 256) if i == 0 else np.float32(10 ** r.uniform(-3, -1.5))
    x_zp = np.array(r.integers(info.min, info.max + 1), dtype)
    y_zp = np.array(info.min if i < 2 else r.integers(info.min, info.max + 1), dtype)
    return x_scale, x_zp, y_scale, y_zp


def _rows(x, axis, opset):
    """The rows the kernel normalizes, and how to put a per-row-element array back in x's shape
    (before opset 13: x flattened from `axis`; from 13: the single `axis`; default -1 in both,
    as onnxruntime's kernel and our reference take it)."""
    axis = -1 if axis is None else axis
    if opset < 13:
        start = axis % x.ndim
        return x.reshape(int(np.prod(x.shape[:start])), -1), lambda y: y.reshape(x.shape)
    moved = np.moveaxis(x, axis, -1)
    return moved.reshape(-1, moved.shape[-1]), lambda y: np.moveaxis(
        y.reshape(moved.shape), -1, axis)  # fmt: skip


def _ratio_overflows(x, x_scale, y_scale, axis, opset):
    """Where float32(e · floor(1 / Y_scale)) is infinite, e being the element's entry of the
    kernel's exponential table."""
    rows, back = _rows(x, axis, opset)
    wide = rows.astype(np.int32)
    e = exp_table(np.float32(x_scale), rows.shape[1])[wide - wide.max(axis=1, keepdims=True) + 255]
    with np.errstate(over="ignore"):
        product = e * np.floor(np.float32(1) / np.float32(y_scale))
    return back(np.isinf(product))


def _indefinite(y_zp: int, dtype) -> int:
    """The output x86-64's conversion of an infinite ratio gives (see below)."""
    if dtype == np.uint8:
        return y_zp  # (-2**63 + y_zp) mod 2**32, then min(., 255)
    total = -(2**31) + y_zp
    return int(np.clip((total + 2**31) % 2**32 - 2**31, -128, 127))  # wrapped to int32


def check_against_onnxruntime(inputs, attrs, axis, opset):
    """No ONNX specification exists for com.microsoft QLinearSoftmax: onnxruntime's kernel is
    its definition, compared bit for bit on every element whose ratio is finite. Where
    float32(e · floor(1 / Y_scale)) overflows to infinity, the float-to-integer conversion of
    the infinite ratio decides, and it depends on the CPU code path: x86-64's cvttss2si (the
    kernel elsewhere, which our reference reproduces) gives its "integer indefinite" value,
    which becomes Y_zero_point for uint8 (through int64 and a uint32 addition) and for int8
    -2**31 + Y_zero_point in int32 arithmetic, saturated (`_indefinite`), while onnxruntime on
    an AVX2 CPU without AVX-512 saturates to the type's maximum (255, 127). So such elements
    must hold exactly one of these two values."""
    x, x_scale, _, y_scale, y_zp = inputs
    (ours,), inferred = run_ours("QLinearSoftmax", inputs, attrs, 1, domain=MS)
    (theirs,) = run_ort("QLinearSoftmax", inputs, attrs, opset=13, domain=MS)
    assert ours.dtype == theirs.dtype == x.dtype and ours.shape == theirs.shape == x.shape
    assert inferred[0].shape == x.shape and inferred[0].dtype == DataType.from_numpy(x.dtype)
    overflow = _ratio_overflows(x, x_scale, y_scale, axis, opset)
    np.testing.assert_array_equal(ours[~overflow], theirs[~overflow])
    x86 = _indefinite(int(y_zp), x.dtype)
    assert np.all(ours[overflow] == x86)
    assert np.all(np.isin(theirs[overflow], [x86, np.iinfo(x.dtype).max]))
    return overflow


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(("shape", "axis", "opset"), CASES)
def test_qlinear_softmax_equals_onnxruntime(dtype, shape, axis, opset):
    r = rng(83)
    info = np.iinfo(dtype)
    attrs = {"opset": opset} if axis is None else {"opset": opset, "axis": axis}
    for i in range(5):
        x = r.integers(info.min, info.max + 1, shape).astype(dtype)
        x_scale, x_zp, y_scale, y_zp = quant_params(r, dtype, i)
        check_against_onnxruntime([x, x_scale, x_zp, y_scale, y_zp], attrs, axis, opset)


def test_overflowing_ratios_are_tested():
    # One-element rows with Y_scale 1/256: e·256 overflows in every element.
    x = np.zeros((3, 1), np.uint8)
    inputs = [x, np.float32(0.05), np.uint8(0), np.float32(1 / 256), np.uint8(7)]
    assert check_against_onnxruntime(inputs, {"opset": 13}, -1, 13).all()


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_softmax_without_x_zero_point_equals_onnxruntime(dtype):
    x = rng(84).integers(0, 100, (3, 16)).astype(dtype)
    y_zp = np.array(np.iinfo(dtype).min, dtype)
    check_against_onnxruntime([x, np.float32(0.05), None, np.float32(1 / 256), y_zp],
                              {"opset": 13}, None, 13)


def test_qlinear_softmax_needs_the_opset_attribute():
    with pytest.raises(ModelError, match=r"required attribute 'opset' .* set opset=13"):
        make_op("QLinearSoftmax", {"axis": 1}, 1, domain=MS)
