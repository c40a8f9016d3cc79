"""Shared fixtures: the bundled example after the passes (run once per test session)."""

import pytest

from systolic.compare.sweep import PreparedModel, prepare_model
from systolic.examples import example_path


@pytest.fixture(scope="session")
def lenet() -> PreparedModel:
    """The bundled quantized LeNet after the mapper passes, with its seeded random input."""
    return prepare_model(example_path())
