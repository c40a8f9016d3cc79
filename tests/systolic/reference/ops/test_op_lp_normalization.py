import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op, rng

X = rng(108).standard_normal((2, 3, 5)).astype(np.float32)


@pytest.mark.parametrize("opset", [1, 22])
@pytest.mark.parametrize("p", [None, 1, 2])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_lp_normalization(opset, p, axis):
    """p=1 divides by the sum of |x|; onnx's ReferenceEvaluator sums x itself (its bug), so
    for p=1 the expected values are numpy's."""
    attrs = {k: v for k, v in (("p", p), ("axis", axis)) if v is not None}
    expected = None
    if p == 1:
        norm = np.abs(X.astype(np.float64)).sum(axis=-1 if axis is None else axis, keepdims=True)
        expected = [(X / norm).astype(np.float32)]
    check_op("LpNormalization", [X], attrs, opset=opset, expected=expected)


def test_zero_norm_gives_zero():
    """onnx's ReferenceEvaluator also gives 0 but warns (an error under pytest's filters)."""
    x = np.zeros((2, 3), np.float32)
    check_op("LpNormalization", [x], opset=22, expected=[np.zeros((2, 3), np.float32)])


def test_p_must_be_1_or_2():
    with pytest.raises(ModelError, match=r"'p' must be 1 or 2, got 3"):
        make_op("LpNormalization", {"p": 3}, 22)
