import numpy as np
import pytest

from ..oracle import check_op, rng
from ..ort_oracle import run_ort

X = rng(54).standard_normal((2, 3, 4)).astype(np.float32)
PADS = [[0, 1, 2, 0, 2, 1], [1, 0, 0, 1, 0, 2], [0, -1, 1, 0, 1, -2]]


@pytest.mark.parametrize("opset", [11, 13, 18, 19, 21, 23])
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", PADS)
def test_pad_inputs(opset, mode, pads):
    inputs = [X, np.array(pads, np.int64)]
    if mode == "constant":
        inputs.append(np.array(1.5, np.float32))
    # onnx's reference cannot crop (negative pads): onnxruntime is the oracle there.
    expected = run_ort("Pad", inputs, {"mode": mode}, opset=opset) if min(pads) < 0 else None
    check_op("Pad", inputs, {"mode": mode}, opset=opset, expected=expected)


@pytest.mark.parametrize("pads", PADS[:2])
def test_pad_wrap_19(pads):
    check_op("Pad", [X, np.array(pads, np.int64)], {"mode": "wrap"}, opset=19)


def test_pad_axes_18():
    inputs = [X, np.array([1, 2, 0, 1], np.int64), None, np.array([0, -1], np.int64)]
    check_op("Pad", inputs, opset=18)


@pytest.mark.parametrize("mode", ["constant", "edge"])
def test_pad_attribute_version_2(mode):
    pads = [0, 1, 2, 1, 0, 1]
    expected = np.pad(X, [(0, 1), (1, 0), (2, 1)], mode=mode,
                      **({"constant_values": 0.5} if mode == "constant" else {}))
    check_op("Pad", [X], {"pads": pads, "mode": mode, "value": 0.5}, opset=2, expected=[expected])
