import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import Attrs, DataType
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_systolic_qtable import QTable


def run(to, x, table):
    return QTable(Attrs({"to": to}), 1, "node").run([x, table])[0]


def lookup(x, table, to):
    """Python-loop oracle of the contract: flip in, index, flip out."""
    out = []
    for v in x.reshape(-1).tolist():
        s8 = v if x.dtype == np.int8 else v - 128
        y = int(table[s8 + 128])
        out.append(y if to == 3 else y + 128)
    return np.array(out, np.int8 if to == 3 else np.uint8).reshape(x.shape)


@pytest.mark.parametrize("x_type", [np.uint8, np.int8])
@pytest.mark.parametrize("to", [2, 3])
def test_every_input_value_reads_its_entry(x_type, to):
    r = np.random.default_rng(3)
    table = r.integers(-128, 128, 256).astype(np.int8)
    info = np.iinfo(x_type)
    x = np.arange(info.min, info.max + 1).astype(x_type).reshape(2, 4, 32)
    got = run(to, x, table)
    assert got.dtype == (np.uint8 if to == 2 else np.int8) and got.shape == x.shape
    np.testing.assert_array_equal(got, lookup(x, table, to))


def test_identity_table_of_uint8_is_the_identity():
    table = np.arange(-128, 128).astype(np.int8)
    x = np.array([0, 1, 127, 128, 255], np.uint8)
    np.testing.assert_array_equal(run(2, x, table), x)
    # read as int8 output: the same bytes flipped
    np.testing.assert_array_equal(run(3, x, table), (x.astype(np.int16) - 128).astype(np.int8))


def test_infer_keeps_the_shape_and_takes_the_type_from_to():
    op = QTable(Attrs({"to": 3}), 1, "node")
    out = op.infer([TensorInfo(DataType.UINT8, (1, 3, 5)), TensorInfo(DataType.INT8, (256,))])
    assert out[0].dtype == DataType.INT8 and out[0].shape == (1, 3, 5)


def test_rejects_missing_or_bad_to():
    with pytest.raises(ModelError, match=r"node 'node'.*required attribute 'to' is missing"):
        QTable(Attrs({}), 1, "node")
    with pytest.raises(ModelError, match=r"to must be 2 \(uint8\) or 3 \(int8\), got 1"):
        QTable(Attrs({"to": 1}), 1, "node")


@pytest.mark.parametrize(("dtype", "shape"), [(DataType.INT8, (255,)),
                                              (DataType.INT32, (256,))])
def test_rejects_a_table_that_is_not_256_int8(dtype, shape):
    op = QTable(Attrs({"to": 2}), 1, "node")
    with pytest.raises(ModelError, match=r"Table must be int8 with 256 entries"):
        op.infer([TensorInfo(DataType.UINT8, (4,)), TensorInfo(dtype, shape)])


def test_rejects_a_float_input():
    op = QTable(Attrs({"to": 2}), 1, "node")
    with pytest.raises(ModelError, match=r"X has element type f32; expected u8 or i8"):
        op.infer([TensorInfo(DataType.FLOAT, (4,)), TensorInfo(DataType.INT8, (256,))])
