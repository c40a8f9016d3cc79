"""Map the top-level source folders into the single `systolic` import namespace, and build the
native engine.

`systolic/` is the package itself; `hdl/`, `mapper/`, `sim/` and `proto/` become
`systolic.hdl`, `systolic.mapper`, `systolic.sim` and `systolic.proto`. Every folder below
them that has an `__init__.py` is a subpackage. All other metadata lives in pyproject.toml.

`systolic/hdl`, `systolic/mapper`, `systolic/sim` and `systolic/proto` are symbolic links to
those folders, so that tools which walk the package on disk (mypy, import-linter, editors) see
the installed layout in the source tree; packages are still found from the real folders.

The native engine (docs/cycle-model.md, "Native engines") is one C extension,
`systolic.sim.native._engine`, compiled from `sim/native/*.c` and their one header `isa.h`.
It is optional: without a working C compiler (`CC=false pip install .`) the install succeeds
with a warning and the model backend runs the Python specification. An editable install puts
the library next to its sources (`sim/native/_engine.*.so`); after editing a C file, run
`pip install -e .` again (or `python setup.py build_ext --inplace`): until then the engine
reports itself out of date and is not used.
"""

import runpy
from pathlib import Path

from setuptools import Extension, find_packages, setup

PACKAGE_FOLDERS = {
    "systolic": "systolic",
    "systolic.hdl": "hdl",
    "systolic.mapper": "mapper",
    "systolic.sim": "sim",
    "systolic.proto": "proto",
}
LINKED = [name.split(".")[1] for name in PACKAGE_FOLDERS if "." in name]
NATIVE = "sim/native"
ENGINE_FLAGS = ["-O3", "-std=c11", "-Wall", "-Werror=implicit", "-Wno-psabi"]
"""Compiler flags of the native engine, after Python's own (which set -fwrapv)."""


def _all_packages() -> list[str]:
    packages = []
    for package, folder in PACKAGE_FOLDERS.items():
        packages.append(package)
        excluded = [f"{link}{tail}" for link in LINKED for tail in ("", ".*")]
        excluded = excluded if folder == "systolic" else []
        packages.extend(f"{package}.{sub}" for sub in find_packages(folder, exclude=excluded))
    return packages


def _engine() -> Extension:
    """Return the native engine's extension: its sources, and their digest compiled in."""
    sources = runpy.run_path(str(Path(__file__).resolve().parent / NATIVE / "sources.py"))
    digest = sources["source_digest"](Path(__file__).resolve().parent / NATIVE)
    return Extension(
        "systolic.sim.native._engine",
        sources=[f"{NATIVE}/{name}" for name in sources["SOURCES"]],
        depends=[f"{NATIVE}/{sources['HEADER']}"],
        include_dirs=[NATIVE],
        define_macros=[("ENGINE_SOURCES_DIGEST", f'"{digest}"')],
        extra_compile_args=ENGINE_FLAGS,
        optional=True,
    )


setup(packages=_all_packages(), package_dir=PACKAGE_FOLDERS, ext_modules=[_engine()])
