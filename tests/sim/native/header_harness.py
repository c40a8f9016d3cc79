"""Compiling small C test programs against the engine's header `isa.h` (tests only).

The tool itself never compiles C at run time (setup.py builds the engine at install time);
these tests compile a few lines around the header to check it against the Python
specification directly. `compile_with_header(source, folder)` returns the loaded library, or
skips the calling test when no C compiler is on PATH.
"""

import ctypes
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from systolic.sim.native.isa_header import HEADER_NAME


def compile_with_header(source: str, folder: Path) -> ctypes.CDLL:
    """Compile `source` (which includes "isa.h") into a library in `folder` and load it."""
    compiler = next((shutil.which(name) for name in ("cc", "gcc", "clang") if shutil.which(name)),
                    None)
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc or clang) to compile the header test")
    header = resources.files("systolic.sim.native").joinpath(HEADER_NAME)
    (folder / HEADER_NAME).write_bytes(header.read_bytes())
    (folder / "test.c").write_text(source, encoding="utf-8")
    library = folder / "libtest.so"
    done = subprocess.run([compiler, "-O1", "-std=c11", "-shared", "-fPIC", "-Wall", "-Werror",
                           "-I", str(folder), "-o", str(library), str(folder / "test.c")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return ctypes.CDLL(str(library))
