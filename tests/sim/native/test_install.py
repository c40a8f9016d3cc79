"""Installing without a C compiler: the install succeeds and the tool runs on the Python
specification, saying so (slow: a pip install of a copy of the sources)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ("setup.py", "pyproject.toml", "README.md", "systolic", "hdl", "mapper", "sim", "proto")
"""What a source install reads (a copy, so that no earlier build in the clone is reused)."""


def _copy_sources(target: Path) -> Path:
    target.mkdir()
    ignored = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "build", "*.egg-info")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, symlinks=True, ignore=ignored)
        else:
            shutil.copy2(source, target / name)
    return target


@pytest.mark.slow
def test_an_install_without_a_compiler_runs_on_the_python_specification(tmp_path) -> None:
    source = _copy_sources(tmp_path / "source")
    target = tmp_path / "installed"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(source)],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env=dict(os.environ, CC="false"))
    assert installed.returncode == 0, installed.stderr
    assert not list(target.glob("systolic/sim/native/_engine*"))
    environment = dict(os.environ, PYTHONPATH=str(target))
    environment.pop("SYSTOLIC_NATIVE", None)
    code = ("import systolic; from systolic.sim.native.build import native_status; "
            "print(systolic.__file__); print(native_status())")
    status = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path, env=environment)
    where, said = status.stdout.splitlines()
    assert Path(where).is_relative_to(target)
    assert said.startswith("(False, 'native engine not built (no C compiler at install time): "
                           "running the Python specification;")
    simulated = subprocess.run(
        [sys.executable, "-m", "systolic.commands.cli", "simulate", "--backend", "model",
         "--no-onnxruntime", "--quiet"],
        capture_output=True, text=True, check=False, cwd=tmp_path, env=environment)
    assert simulated.returncode == 0, simulated.stderr
