"""The Verilator caches repair themselves: damaged entries are rebuilt (saying so in one line),
killed builds leave nothing behind for good. The build step is faked except in the slow test."""

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from systolic.sim.verilator import build, cache_entry
from systolic.sim.verilator.build import build_simulator
from systolic.sim.verilator.cache_entry import MANIFEST, STALE_SECONDS, remove_stale
from systolic.sim.verilator.toolchain import Toolchain

from .conftest import needs_verilator

_REBUILT = re.compile(r"^systolic: warning: the cached Verilator build \S+ is damaged \((.+)\); "
                      r"rebuilding it\n$")


@pytest.fixture
def fake_builds(monkeypatch, tmp_path: Path) -> list[str]:
    """Fake Verilator and make: `sim` is a script holding the Verilog; return the builds made."""
    made: list[str] = []

    def compile_(toolchain, work: Path, top: str, runtime: Path, jobs) -> int:
        (work / "obj").mkdir()
        verilog = (work / "top.v").read_text()
        (work / "obj" / "sim").write_text(f"#!/bin/sh\n# {verilog}\n")
        (work / "obj" / "sim").chmod(0o755)
        (work / "obj" / "verilated.o").write_bytes(b"runtime object")
        (work / "build.log").write_text("built\n")
        made.append(verilog)
        return 0

    monkeypatch.setattr(build, "_compile", compile_)
    monkeypatch.setattr(build, "find_toolchain", lambda: Toolchain(tmp_path, Path("/bin/true"),
                                                                   "fake 1.0"))
    return made


def _build(cache: Path) -> build.Build:
    return build_simulator("module top; endmodule\n", "#define X\n", top="top", cache_dir=cache)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "no manifest", "extra file"])
def test_a_damaged_build_is_rebuilt_and_said_once(fake_builds, tmp_path: Path, capsys,
                                                  damage: str) -> None:
    cache = tmp_path / "cache"
    first = _build(cache)
    good = first.executable.read_bytes()
    assert _build(cache).cached and capsys.readouterr().err == ""
    if damage == "truncated":
        first.executable.write_bytes(good[: len(good) // 2])
    elif damage == "garbage":
        first.executable.write_bytes(bytes(len(good)))
    elif damage == "no manifest":
        (first.executable.parent / MANIFEST).unlink()
    else:
        (first.executable.parent / "core").write_bytes(b"left over")
    again = _build(cache)
    assert not again.cached and again.executable == first.executable
    assert again.executable.read_bytes() == good
    assert _REBUILT.fullmatch(capsys.readouterr().err)
    assert _build(cache).cached and len(fake_builds) == 2
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # (nothing set aside)


def test_damaged_runtime_objects_are_made_again(fake_builds, tmp_path: Path, capsys) -> None:
    cache = tmp_path / "cache"
    _build(cache)
    (runtime,) = cache.glob("runtime-*")
    assert cache_entry.check_entry(runtime) is None
    (runtime / "verilated.o").write_bytes(b"")
    build_simulator("module other; endmodule\n", "", top="other", cache_dir=cache)
    assert "the cached Verilator runtime" in capsys.readouterr().err
    (runtime,) = cache.glob("runtime-*")
    assert (runtime / "verilated.o").read_bytes() == b"runtime object"
    assert cache_entry.check_entry(runtime) is None


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_stale_temporaries_are_removed(tmp_path: Path) -> None:
    here = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:40]
    names = {
        "dead": f".build-0123abcd-{here}-p{_dead_pid()}-x1y2",
        "old_elsewhere": ".build-0123abcd-otherhost-p1-x1y2",
        "old_unowned": ".build-0123abcd-q9w8",  # (the name earlier versions gave)
        "old_emit": f".emit-{here}-p{_dead_pid()}-abc.json",
        "live": f".build-0123abcd-{here}-p{os.getpid()}-x1y2",
        "fresh_elsewhere": ".build-0123abcd-otherhost-p1-z9z9",
        "entry": "0123abcd" * 4,
    }
    for key, name in names.items():
        path = tmp_path / name
        if key == "old_emit":
            path.write_text("{")
        else:
            (path / "obj").mkdir(parents=True)
        if key.startswith("old"):
            past = time.time() - STALE_SECONDS - 60
            for touched in (path / "obj", path):
                if touched.exists():
                    os.utime(touched, (past, past))
    removed = remove_stale(tmp_path)
    kept = {"live", "fresh_elsewhere", "entry"}
    assert sorted(removed) == sorted(names[k] for k in names if k not in kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[k] for k in kept)


def test_a_build_removes_the_folders_of_killed_builds(fake_builds, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    killed = cache / f".build-0123abcd-{cache_entry.owner_tag().rsplit('-p', 1)[0]}-p" \
                     f"{_dead_pid()}-k1ll"
    (killed / "obj").mkdir(parents=True)
    _build(cache)
    assert not killed.exists()


@pytest.mark.slow
def test_a_truncated_verilated_simulator_is_rebuilt(copy_design, tiny_cache: Path,
                                                    capfd) -> None:
    needs_verilator()
    design = copy_design(4, 0)
    built = design.build()
    size = built.executable.stat().st_size
    with open(built.executable, "r+b") as handle:
        handle.truncate(size // 3)
    capfd.readouterr()
    again = build_simulator(design.verilog, design.header, top=design.top, cache_dir=tiny_cache)
    assert not again.cached and again.executable.stat().st_size == size
    assert _REBUILT.fullmatch(capfd.readouterr().err)
    assert build_simulator(design.verilog, design.header, top=design.top,
                           cache_dir=tiny_cache).cached
