"""`ort_oracle.check_ort` leaves onnxruntime out only where it is wrong: on inputs made to
saturate, the detector flags them, and on a CPU whose onnxruntime saturates, onnxruntime
indeed differs from the specification there (elsewhere it equals it). So the comparisons it
leaves out do not quietly weaken the tests."""

import numpy as np
import pytest

from systolic.ir import Attrs, Node
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates
from systolic.simulation.saturating_layers import node_overflows

from .ort_oracle import SKIPPED, check_ort, run_ort, saturation_reason
from .spec_oracle import qgemm_real, spec_outputs

MS = "com.microsoft"
U8, S8 = np.uint8(0), np.int8(0)
BIG = np.full((3, 6), 255, np.uint8)  # activations
LOW = np.full((6, 2), -128, np.int8)  # weights: every pair sums to -65280
X = np.full((1, 4, 3, 3), 255, np.uint8)
W = np.full((2, 4, 1, 1), -128, np.int8)
F1, F1000 = np.float32(1), np.float32(1000)

CASES = {
    "MatMulInteger": ([BIG, LOW], {}, 10, ""),
    "QLinearMatMul": ([BIG, F1, U8, LOW, F1, S8, F1000, np.uint8(128)], {}, 10, ""),
    "QLinearConv": ([X, F1, U8, W, F1, S8, F1000, np.uint8(128)], {}, 10, ""),
    "QGemm": ([BIG, F1, U8, LOW, F1, S8], {}, 13, MS),  # float output: exact sums
}


def _spec(op_type, inputs, attrs, opset, domain):
    if domain == MS:
        return qgemm_real(*inputs).astype(np.float32)
    (want,) = spec_outputs(op_type, inputs, attrs, opset=opset)
    return want


@pytest.mark.parametrize("op_type", CASES)
def test_saturating_inputs_are_flagged_and_onnxruntime_differs_there(op_type):
    inputs, attrs, opset, domain = CASES[op_type]
    node = Node(op_type, (), ("y",), domain=domain, attrs=Attrs())
    assert node_overflows(node, inputs)  # (a) on every CPU
    reason = saturation_reason(op_type, inputs, attrs, domain=domain)
    (theirs,) = run_ort(op_type, inputs, attrs, opset=opset, domain=domain)
    spec = _spec(op_type, inputs, attrs, opset, domain)
    if onnxruntime_saturates():  # (b) onnxruntime is wrong exactly where it is left out
        assert reason is not None
        assert not np.array_equal(theirs, spec)
    else:
        assert reason is None
        np.testing.assert_array_equal(theirs, spec)


def test_left_out_comparisons_are_recorded_and_checked_with_the_specification():
    inputs, attrs, opset, _ = CASES["MatMulInteger"]
    before = len(SKIPPED)
    ours = check_ort("MatMulInteger", inputs, attrs, opset=opset)
    np.testing.assert_array_equal(ours, np.full((3, 2), 6 * 255 * -128))
    assert len(SKIPPED) == before + onnxruntime_saturates()
