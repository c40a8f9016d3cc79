"""The native engine, built at install time: its status, the switch, and what makes it unusable."""

import importlib.machinery
import os
import shutil

import pytest

from systolic.sim.native import build


@pytest.fixture
def fresh_engine():
    """Forget the loaded engine before and after the test (it is checked once per process)."""
    build._engine.cache_clear()
    yield
    build._engine.cache_clear()


def test_the_status_agrees_with_every_part() -> None:
    available, reason = build.native_status()
    assert reason and "\n" not in reason
    for part in build.PARTS:
        assert (build.load_library(part) is not None) == available
        assert build.unavailable_reason(part) == (None if available else reason)


def test_an_install_with_a_c_compiler_built_the_engine() -> None:
    if os.environ.get("SYSTOLIC_NATIVE") == "0":
        pytest.skip("SYSTOLIC_NATIVE=0 is set")
    if not any(shutil.which(name) for name in ("cc", "gcc", "clang")):
        pytest.skip("no C compiler: the install could not build the engine")
    available, reason = build.native_status()
    assert available, reason
    assert reason.startswith("native engine ") and "_engine" in reason


def test_native_code_can_be_switched_off(monkeypatch) -> None:
    monkeypatch.setenv("SYSTOLIC_NATIVE", "0")
    expected = ("native engine disabled by SYSTOLIC_NATIVE=0: running the Python "
                "specification")
    assert build.native_status() == (False, expected)
    for part in build.PARTS:
        assert build.load_library(part) is None
        assert build.unavailable_reason(part) == expected


def test_an_unknown_part_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^unknown native engine part 'gold'; the parts are "
                                         r"\['facts', 'golden', 'timing'\]$"):
        build.load_library("gold")


def test_an_engine_that_was_not_built_says_so(monkeypatch, fresh_engine) -> None:
    monkeypatch.setattr(build.importlib.util, "find_spec", lambda name: None)
    available, reason = build.native_status()
    assert not available
    assert reason.startswith("native engine not built (no C compiler at install time): "
                             "running the Python specification;")


def test_a_damaged_engine_file_is_not_loaded(monkeypatch, fresh_engine, tmp_path) -> None:
    damaged = tmp_path / "_engine.so"
    damaged.write_bytes(b"\x7fELF" + b"\0" * 60)  # (a truncated library)
    spec = importlib.machinery.ModuleSpec(build.ENGINE_MODULE, None, origin=str(damaged))
    monkeypatch.setattr(build.importlib.util, "find_spec", lambda name: spec)
    available, reason = build.native_status()
    assert not available
    assert reason.startswith(f"native engine {damaged} does not load (")
    assert build.load_library("golden") is None


def test_an_engine_older_than_its_sources_is_not_used(monkeypatch, fresh_engine) -> None:
    if build._engine()[0] is None:
        pytest.skip(build.native_status()[1])
    build._engine.cache_clear()
    monkeypatch.setattr(build, "source_digest", lambda folder: "0" * 32)
    available, reason = build.native_status()
    assert not available
    assert reason.endswith("is out of date with its C sources: reinstall the package with a "
                           "C compiler (pip install -e . in a clone)")
