import numpy as np
import pytest

from systolic.errors import SimulationError
from systolic.simulation.onnxruntime_check import compare_outputs


def test_compare_counts_every_element():
    ours = {"y": np.array([[1, 2, 3]], np.uint8), "z": np.array([0.5, 1.0], np.float32)}
    theirs = {"y": np.array([[1, 4, 3]], np.uint8), "z": np.array([0.5, 1.25], np.float32)}
    result = compare_outputs(ours, theirs)
    assert result.max_abs_diff == 2.0  # uint8 difference without wrap-around
    assert result.elements == 5
    assert result.equal_fraction == pytest.approx(3 / 5)


def test_compare_refuses_shape_disagreement():
    with pytest.raises(SimulationError, match="onnxruntime gives shape"):
        compare_outputs({"y": np.zeros((2, 2))}, {"y": np.zeros((4,))})
