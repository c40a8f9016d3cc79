"""systolic.QSoftmax: against an exact Python-integer oracle of the numeric contract, and within
one output step of QuantizeLinear(Softmax(DequantizeLinear(x))) computed in float64 (the
contract's accuracy: the exp table's rounding, the truncated reciprocal and one rounding of p
stay below one step, except at half-way points, which these random inputs do not hit)."""

import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import Attrs, DataType
from systolic.isa.requant import quantize_multiplier
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_systolic_qsoftmax import QSoftmax


def exp_table(x_scale: float) -> np.ndarray:
    """E[k] = rhe(2^15 exp(-x_scale k)) as the mapper fills it (docs/numeric-contract.md)."""
    return np.rint(2**15 * np.exp(-x_scale * np.arange(256.0))).astype(np.uint16)


def _op(y_scale: float, y_type: DataType = DataType.UINT8, zero: int = 0, axis: int = -1,
        **extra: int) -> QSoftmax:  # fmt: skip
    m, s = quantize_multiplier(1.0 / (2**15 * y_scale))
    attrs = {"multiplier": m, "shift": s, "y_zero_point": zero, "y_type": int(y_type),
             "axis": axis, **extra}
    return QSoftmax(Attrs(attrs), 1, "softmax")


def _round_shift(value: int, bits: int) -> int:
    """Exact round half to even of value / 2**bits on Python integers."""
    floor, rest = value >> bits, value & ((1 << bits) - 1)
    half = 1 << (bits - 1) if bits else 0
    return floor + (bits > 0 and (rest > half or (rest == half and floor & 1)))


def _oracle(row: list[int], table: np.ndarray, m: int, s: int, zero: int, lo: int,
            hi: int) -> list[int]:  # fmt: skip
    top = max(row)
    exps = [int(table[top - x]) for x in row]
    total = sum(exps)
    r = (1 << 32) - 1 if total == 0 else min((1 << 46) // total, (1 << 32) - 1)
    out = []
    for e in exps:
        p = _round_shift(e * r, 31)
        out.append(min(max(_round_shift(p * m, 31 + s) + zero, lo), hi))
    return out


@pytest.mark.parametrize("x_type", [np.uint8, np.int8])
def test_equals_the_integer_oracle(x_type):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    info = np.iinfo(x_type)
    x = rng.integers(info.min, int(info.max) + 1, (6, 23)).astype(x_type)
    table = exp_table(0.03)
    op = _op(1 / 256, DataType.INT8, zero=-128, y_lo=-100, y_hi=120)
    got = op.run([x, table])[0]
    for row, out in zip(x.astype(int).tolist(), got.astype(int).tolist(), strict=True):
        assert out == _oracle(row, table, op.scaling.multiplier, op.scaling.shift, -128, -100, 120)


@pytest.mark.parametrize("x_scale", [0.01, 0.05, 0.2, 1.0])
@pytest.mark.parametrize("length", [1, 7, 64, 300])
def test_within_one_step_of_the_float_softmax(x_scale, length):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(length)
    x = rng.integers(0, 256, (8, length)).astype(np.uint8)
    y_scale = 1 / 256
    got = _op(y_scale).run([x, exp_table(x_scale)])[0].astype(np.int64)
    real = x_scale * (x.astype(np.float64) - 77)
    e = np.exp(real - real.max(axis=1, keepdims=True))
    want = np.clip(np.rint(e / e.sum(axis=1, keepdims=True) / y_scale), 0, 255)
    assert np.abs(got - want).max() <= 1


def test_axis_flattens_the_trailing_axes():  # type: ignore[no-untyped-def]
    """axis 1 of [2, 3, 4]: each row is the 12 elements from axis 1 on (the 2-D coercion)."""
    x = np.random.default_rng(2).integers(-128, 128, (2, 3, 4)).astype(np.int8)
    table = exp_table(0.1)
    flat = _op(1 / 256).run([x.reshape(2, 12), table])[0]
    np.testing.assert_array_equal(_op(1 / 256, axis=1).run([x, table])[0], flat.reshape(2, 3, 4))
    rows = _op(1 / 256, axis=-1).run([x, table])[0]
    np.testing.assert_array_equal(rows, _op(1 / 256).run([x.reshape(6, 4), table])[0]
                                  .reshape(2, 3, 4))  # fmt: skip


def test_an_all_zero_table_gives_the_capped_reciprocal():  # type: ignore[no-untyped-def]
    x = np.zeros((1, 4), np.uint8)
    got = _op(1 / 256, zero=3).run([x, np.zeros(256, np.uint16)])[0]
    np.testing.assert_array_equal(got, np.full((1, 4), 3))


def test_checks():  # type: ignore[no-untyped-def]
    op = _op(1 / 256)
    x = TensorInfo(DataType.UINT8, (2, 5))
    assert op.infer([x, TensorInfo(DataType.UINT16, (256,))])[0].shape == (2, 5)
    with pytest.raises(ModelError, match="ExpTable must be u16 with 256 entries"):
        op.infer([x, TensorInfo(DataType.INT16, (256,))])
    with pytest.raises(ModelError, match="X has element type f32"):
        op.infer([TensorInfo(DataType.FLOAT, (2, 5)), TensorInfo(DataType.UINT16, (256,))])
    with pytest.raises(ModelError, match="shift must lie in"):
        QSoftmax(Attrs({"multiplier": 1, "shift": 40, "y_type": 2}), 1, "softmax")
