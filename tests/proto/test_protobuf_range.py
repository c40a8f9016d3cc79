"""Both ends of the core requirements run the tool: the lowest protobuf and numpy pyproject.toml
allows, and the newest protobuf below its upper bound, each in a throwaway virtual environment
(from the package index: slow) where the bundled example is compiled and disassembled."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from systolic.examples import example_path

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from systolic.commands.cli import main; sys.exit(main(sys.argv[1:]))"
VERSIONS = "import google.protobuf, numpy; print(google.protobuf.__version__, numpy.__version__)"


def _requirement(name: str) -> str:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next(d for d in dependencies if re.match(rf"{name}\b", d))


def _lowest(name: str) -> str:
    match = re.search(r">=([0-9.]+)", _requirement(name))
    assert match, _requirement(name)
    return f"{name}=={match.group(1)}"


def _environment(folder: Path, *requirements: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True)
    return python


def _run(python: Path, *args: str) -> str:
    done = subprocess.run([str(python), *args], capture_output=True, text=True, check=False,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("protobuf", ["lowest", "newest"])
def test_the_bundled_example_compiles_and_reads_back(tmp_path: Path, protobuf: str) -> None:
    if protobuf == "lowest":
        requirements = [_lowest("protobuf"), _lowest("numpy")]
    else:
        requirements = [_requirement("protobuf"), _requirement("numpy")]
    python = _environment(tmp_path / "venv", *requirements)
    versions = _run(python, "-c", VERSIONS).split()
    if protobuf == "lowest":
        assert [f"protobuf=={versions[0]}", f"numpy=={versions[1]}"] == requirements
    else:
        upper = int(re.search(r"<([0-9]+)", _requirement("protobuf")).group(1))  # type: ignore[union-attr]
        assert int(versions[0].split(".")[0]) == upper - 1
    program = tmp_path / "lenet.sysp"
    _run(python, "-c", CLI, "compile", str(example_path()), "-o", str(program), "--quiet")
    listing = _run(python, "-c", CLI, "disasm", str(program))
    assert "HALT" in listing
    simulated = _run(python, "-c", CLI, "simulate", "--backend", "model", "--no-onnxruntime")
    assert "reference: bit-exact" in simulated
