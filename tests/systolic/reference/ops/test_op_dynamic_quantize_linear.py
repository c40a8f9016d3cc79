"""DynamicQuantizeLinear against onnx's ReferenceEvaluator and onnxruntime."""

import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng
from ..ort_oracle import run_ort

CASES = {
    "mixed": (rng(80).standard_normal((3, 7)) * 4).astype(np.float32),
    "positive": (rng(81).random((2, 5)) * 9 + 1).astype(np.float32),
    "negative": -(rng(82).random((4,)) * 3 + 0.5).astype(np.float32),
    "zeros": np.zeros((2, 3), np.float32),
    "ties": np.array([-2.5, 0.0, 0.5, 1.5, 2.5, 252.5], np.float32),
}


@pytest.mark.parametrize("name", CASES)
def test_matches_the_onnx_reference_and_onnxruntime(name: str) -> None:
    x = CASES[name]
    if name != "zeros":  # 0/0: the evaluator's scale is 1/255, onnxruntime's (and ours) 1
        check_op("DynamicQuantizeLinear", [x], opset=11, n_outputs=3, rtol=0, atol=0)
    expected = run_ort("DynamicQuantizeLinear", [x], opset=11, n_outputs=3)
    check_op("DynamicQuantizeLinear", [x], opset=11, n_outputs=3, expected=expected,
             rtol=0, atol=0)  # fmt: skip


@pytest.mark.parametrize(("x", "message"), [
    (np.zeros((0, 3), np.float32), r"x is empty"),
    (np.array([1.0, np.nan], np.float32), r"x holds NaN or infinite values"),
])  # fmt: skip
def test_inputs_without_a_range_are_model_errors(x: np.ndarray, message: str) -> None:
    op = make_op("DynamicQuantizeLinear", {}, 11, n_outputs=3)
    with pytest.raises(ModelError, match=message):
        op.run([x])
