import numpy as np
import pytest

from ..oracle import check_op, rng
from ..ort_oracle import run_ort

X = rng(50).standard_normal((2, 7, 3, 3)).astype(np.float32)


def _formula(x, size, alpha=1e-4, beta=0.75, bias=1.0):
    """LRN by its definition, one channel at a time."""
    y = np.empty_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1], c + size // 2 + 1)
        square_sum = np.sum(x[:, lo:hi] ** 2, axis=1)
        y[:, c] = x[:, c] / (bias + alpha / size * square_sum) ** beta
    return y


# onnx's reference LRN loops over the batch instead of the channels, so it is wrong: odd sizes
# go to onnxruntime, which rejects even sizes; those go to the definition.
@pytest.mark.parametrize("opset", [1, 13])
@pytest.mark.parametrize(("size", "attrs"), [(3, {}), (5, {"alpha": 0.01, "beta": 0.5}),
                                             (1, {"bias": 2.0})])
def test_lrn_odd_sizes(opset, size, attrs):
    attrs = {"size": size, **attrs}
    check_op("LRN", [X], attrs, opset=opset,
             expected=run_ort("LRN", [X], attrs, opset=max(opset, 7)))


@pytest.mark.parametrize("size", [2, 4])
def test_lrn_even_sizes(size):
    attrs = {"size": size, "alpha": 0.01, "beta": 0.5, "bias": 2.0}
    check_op("LRN", [X], attrs, opset=13, expected=[_formula(X, **attrs)])
