import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.mapper.passes.accuracy import quantization_accuracy

from .model_builder import build, node


def scaled(factor, shift):
    nodes = [node("Mul", ["x", "f"], ["m"]), node("Add", ["m", "s"], ["y"])]
    return build(nodes, [("x", np.float32, [2, 3])], [("y", np.float32, [2, 3])],
                 {"f": np.float32(factor), "s": np.array([0, 0, shift], np.float32)})


def test_metrics_by_hand():
    x = np.array([[1, 2, 3], [3, 2, 1]], np.float32)
    # second model adds 2.5 to the last column: row 2 becomes [3, 2, 3.5], arg-max moves.
    result = quantization_accuracy(scaled(1, 0), scaled(1, 2.5), {"x": x})
    assert result["max_abs_error"] == 2.5
    assert result["top1_agreement"] == 0.5
    a = x.reshape(-1).astype(np.float64)
    b = a + np.array([0, 0, 2.5, 0, 0, 2.5])
    assert result["cosine_similarity"] == pytest.approx(a @ b / np.linalg.norm(a)
                                                        / np.linalg.norm(b), rel=1e-12)
    assert result["samples"] == 1


def test_needs_a_feed():
    with pytest.raises(ModelError, match=r"^quantization_accuracy needs at least one input feed$"):
        quantization_accuracy(scaled(1, 0), scaled(1, 0), [])
