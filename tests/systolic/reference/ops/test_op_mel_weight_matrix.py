import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType

from ..oracle import check_op, make_op


def _inputs(bands, length, rate, low, high):
    return [np.array(bands, np.int64), np.array(length, np.int64), np.array(rate, np.int64),
            np.array(low, np.float32), np.array(high, np.float32)]


@pytest.mark.parametrize(("bands", "length", "rate", "low", "high"), [
    (8, 16, 8192, 0.0, 4096.0), (40, 512, 16000, 20.0, 7600.0), (80, 400, 16000, 0.0, 8000.0)])
def test_mel_weight_matrix(bands, length, rate, low, high):
    check_op("MelWeightMatrix", _inputs(bands, length, rate, low, high), opset=17,
             known=[0, 1, 2, 3, 4])


def test_output_datatype():
    check_op("MelWeightMatrix", _inputs(8, 16, 8192, 0.0, 4096.0),
             {"output_datatype": int(DataType.DOUBLE)}, opset=17, known=[0, 1, 2, 3, 4])


def test_upper_edge_above_nyquist():
    with pytest.raises(ModelError, match=r"above the Nyquist frequency"):
        make_op("MelWeightMatrix", {}, 17).run(_inputs(8, 16, 8000, 0.0, 9000.0))
