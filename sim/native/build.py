"""Compiling the native engines once per source, compiler and CPU, cached on disk.

`load_library(name)` returns the shared library built from `<name>.c` of this package (with
the generated `isa_fields.h`, `isa_header`) loaded with ctypes, or None when native code is
switched off (`SYSTOLIC_NATIVE=0`) or cannot be built (no C compiler, or it fails);
`unavailable_reason(name)` then says why. Callers fall back to the Python implementation.

The compiler is `$CC`, else the first of `cc`, `gcc`, `clang` on PATH; the flags are
`FLAGS` (with `-march=native`, so the CPU is part of the cache key). Builds go to
`$SYSTOLIC_CACHE_DIR/native` (default `~/.cache/systolic/native`), one folder per hash of the
source, header, compiler identity, flags and CPU: a build is made in a temporary folder and
renamed into place, so concurrent processes never load a half-written library.
"""

import ctypes
import functools
import os
import platform
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from systolic.fileio import digest_parts
from systolic.sim.native.isa_header import isa_header

__all__ = ["FLAGS", "build_library", "cache_root", "load_library", "unavailable_reason"]

FLAGS = ("-O3", "-march=native", "-std=c11", "-shared", "-fPIC", "-Wall", "-Werror=implicit")
"""Flags of every native build (part of the cache key)."""

_reasons: dict[str, str] = {}


def cache_root() -> Path:
    """Return the folder that holds native builds."""
    base = os.environ.get("SYSTOLIC_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "systolic"
    return root / "native"


def unavailable_reason(name: str) -> str | None:
    """Return why the last `load_library(name)` or `build_library(name, ...)` returned None
    (None when it returned a library, or was not called)."""
    return _reasons.get(name)


def load_library(name: str) -> ctypes.CDLL | None:
    """Return the native library `name` (see the module docstring), or None."""
    if os.environ.get("SYSTOLIC_NATIVE", "1") == "0":
        _reasons[name] = "native code is switched off (SYSTOLIC_NATIVE=0)"
        return None
    library = _load_cached(name)
    if library is not None:
        _reasons.pop(name, None)
    return library


@functools.cache
def _load_cached(name: str) -> ctypes.CDLL | None:
    try:
        source = resources.files(__package__).joinpath(f"{name}.c").read_text(encoding="utf-8")
    except OSError as error:
        _reasons[name] = f"the native {name} engine's source is missing: {error}"
        return None
    return build_library(name, source)


def build_library(name: str, source: str) -> ctypes.CDLL | None:
    """Return the library compiled from the C `source` (which may include `isa_fields.h`),
    built once and cached like `load_library`'s; None (with `unavailable_reason(name)` set)
    when it cannot be built or loaded."""
    compiler = _compiler()
    if compiler is None:
        _reasons[name] = ("no C compiler found ($CC, cc, gcc or clang): install one (e.g. gcc) "
                          "for the fast model backend")
        return None
    header = isa_header()
    key = _digest(source, header, compiler[0], compiler[1], "\0".join(FLAGS), _cpu_identity())
    final = cache_root() / f"{name}-{key}"
    library = final / f"lib{name}.so"
    if not library.is_file():
        try:
            failure = _build(name, source, header, compiler[0], final)
        except OSError as error:  # (a cache folder that cannot be written, a compiler crash)
            failure = (f"building the native {name} engine in {final.parent} failed: {error}; "
                       f"set SYSTOLIC_CACHE_DIR to a writable folder")
        if failure is not None:
            _reasons[name] = failure
            return None
    try:
        loaded = ctypes.CDLL(str(library))
    except OSError as error:
        _reasons[name] = f"the native {name} library at {library} does not load: {error}"
        return None
    _reasons.pop(name, None)
    return loaded


def _build(name: str, source: str, header: str, compiler: str, final: Path) -> str | None:
    """Compile `source` into `final/lib<name>.so`; return None, or why it failed."""
    root = final.parent
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".build-{name}-", dir=root))
    try:
        (work / f"{name}.c").write_text(source, encoding="utf-8")
        (work / "isa_fields.h").write_text(header, encoding="utf-8")
        staged = work / "result"
        staged.mkdir()
        command = [compiler, *FLAGS, "-I", str(work), "-o", str(staged / f"lib{name}.so"),
                   str(work / f"{name}.c"), "-lm"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not (staged / f"lib{name}.so").is_file():
            log = root / f"failed-{name}.log"
            log.write_text(" ".join(command) + "\n" + done.stdout + done.stderr, encoding="utf-8")
            return f"compiling the native {name} engine failed (exit {done.returncode}); see {log}"
        try:
            os.rename(staged, final)
        except OSError:
            if not final.is_dir():  # (else a concurrent build got there first)
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return None


@functools.cache
def _compiler() -> tuple[str, str] | None:
    """Return (path, version text) of the C compiler, or None."""
    candidates = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    for candidate in candidates:
        path = shutil.which(candidate)
        if path is None:
            continue
        try:
            done = subprocess.run([path, "--version"], capture_output=True, text=True,
                                  check=False, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return path, done.stdout
    return None


def _cpu_identity() -> str:
    """Return what identifies this CPU's instruction set (the builds use -march=native)."""
    text = platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(("model name", "flags", "Features", "CPU part")):
                    text += "\n" + line.strip()
                if line.strip() == "":
                    break  # (the first processor is enough)
    except OSError:
        pass
    return text


def _digest(*parts: str) -> str:
    return digest_parts(*parts, length=24)
