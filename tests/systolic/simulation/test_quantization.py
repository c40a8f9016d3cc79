"""Quantization accuracy against exact arithmetic on small arrays."""

import numpy as np
import pytest

from systolic.simulation.quantization import quantization_accuracy


def test_error_cosine_and_top1() -> None:
    ours = {"y": np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]], np.float32)}
    ref = {"y": np.array([[1.0, 2.5, 0.0], [0.0, 4.0, 3.0]], np.float32)}
    result = quantization_accuracy(ours, ref)
    x, y = ours["y"].ravel().astype(float), ref["y"].ravel().astype(float)
    assert result["max_abs_error"] == 3.0
    assert result["cosine_similarity"] == pytest.approx(
        x @ y / np.linalg.norm(x) / np.linalg.norm(y)
    )
    assert result["top1_agreement"] == 0.5  # row 0 agrees (index 1), row 1 does not (2 vs 1)


def test_no_class_vector_gives_null_top1() -> None:
    value = {"y": np.zeros((2, 3, 4), np.float32)}
    result = quantization_accuracy(value, value)
    assert result == {"max_abs_error": 0.0, "cosine_similarity": 1.0, "top1_agreement": None}
