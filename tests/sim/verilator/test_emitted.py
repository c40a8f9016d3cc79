# amaranth: UnusedElaboratable=no

"""The emission cache: the Accelerator's build inputs are emitted once per configuration and
source text, and a changed source file or configuration gives a new entry."""

import dataclasses
from pathlib import Path

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.sim.verilator import emitted
from systolic.sim.verilator.design import HarnessParts
from systolic.sim.verilator.emitted import emitted_accelerator, source_files

SMALL = ArrayConfig(rows=2, cols=2, dataflow=Dataflow.WS, spad_kib=8, acc_kib=8)


def test_sources_cover_every_module_the_emission_imports() -> None:
    names = {name for name, _ in source_files()}
    assert "systolic.hdl/accelerator.py" in names
    assert "systolic.isa/fields.py" in names
    assert "systolic.hdl/emit.py" in names
    assert {"systolic.config", "systolic.sim.verilator.ports"} <= names
    assert all(path.is_file() for _, path in source_files())


def test_second_emission_comes_from_the_cache(tmp_path: Path) -> None:
    first, cached = emitted_accelerator(SMALL, cache_dir=tmp_path)
    assert not cached
    assert first.top == "systolic_accel_2x2_ws_harness"
    assert f"module {first.top}(" in first.verilog
    again, cached = emitted_accelerator(SMALL, cache_dir=tmp_path)
    assert cached and again == first


@pytest.fixture
def counted_emissions(monkeypatch) -> list[ArrayConfig]:
    """Replace the (slow) emission by a stand-in that records its calls."""
    calls: list[ArrayConfig] = []

    def emit(config: ArrayConfig) -> HarnessParts:
        calls.append(config)
        return HarnessParts(verilog=f"// {config}", top="t", header="h", command_width=721)

    monkeypatch.setattr(emitted, "emit_accelerator", emit)
    return calls


def test_the_entry_is_the_emission_and_each_configuration_has_its_own(
        tmp_path: Path, counted_emissions) -> None:
    """(A stand-in emission: one real emission takes tens of seconds.)"""
    first, _ = emitted_accelerator(SMALL, cache_dir=tmp_path)
    assert first == emitted.emit_accelerator(SMALL)  # the cache adds nothing
    other = dataclasses.replace(SMALL, dataflow=Dataflow.OS)
    parts, cached = emitted_accelerator(other, cache_dir=tmp_path)
    assert not cached and parts == emitted.emit_accelerator(other)
    assert emitted_accelerator(SMALL, cache_dir=tmp_path)[1]
    assert len(list((tmp_path / "emitted").glob("*.json"))) == 2
    assert counted_emissions == [SMALL, SMALL, other, other]


def test_a_changed_source_file_misses_the_cache(tmp_path: Path, monkeypatch,
                                                counted_emissions) -> None:
    extra = tmp_path / "extra.py"
    extra.write_text("A = 1\n")
    real = source_files()
    monkeypatch.setattr(emitted, "source_files", lambda: [*real, ("extra", extra)])
    _, cached = emitted_accelerator(SMALL, cache_dir=tmp_path)
    assert not cached
    assert emitted_accelerator(SMALL, cache_dir=tmp_path)[1]
    extra.write_text("A = 2\n")
    assert not emitted_accelerator(SMALL, cache_dir=tmp_path)[1]
    assert len(counted_emissions) == 2


def test_a_damaged_entry_is_emitted_again(tmp_path: Path, counted_emissions) -> None:
    first, _ = emitted_accelerator(SMALL, cache_dir=tmp_path)
    (entry,) = (tmp_path / "emitted").glob("*.json")
    entry.write_text("{not json")
    again, cached = emitted_accelerator(SMALL, cache_dir=tmp_path)
    assert not cached and again == first
    assert len(counted_emissions) == 2


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(tmp_path / "unused"))
