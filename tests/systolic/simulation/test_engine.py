"""Which engine the model backend runs on: named in the JSON and in one printed line."""

import pytest

from systolic.sim.native.build import native_status
from systolic.simulation.engine import engine_line, engine_name


def test_switched_off_native_code_runs_the_python_specification(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SYSTOLIC_NATIVE", "0")
    available, reason = native_status()
    assert not available and "SYSTOLIC_NATIVE=0" in reason
    assert engine_name("model") == "python"
    assert engine_line("model") == f"engine: Python specification ({reason})"


def test_the_engine_follows_the_native_status() -> None:
    available, _ = native_status()
    assert engine_name("model") == ("native" if available else "python")
    line = engine_line("model")
    assert line is not None
    assert (line == "engine: native C engine") is available


@pytest.mark.parametrize("backend", ["rtl", "verilator"])
def test_other_backends_are_their_own_engine(backend: str) -> None:
    assert engine_name(backend) is None
    assert engine_line(backend) is None
