"""Regenerate the Python bindings of every `.proto` schema in this folder.

Usage::

    python -m systolic.proto.regenerate            # rewrite proto/*_pb2.py and *_pb2.pyi
    python -m systolic.proto.regenerate --check    # exit 1 if the committed files are stale
    python -m systolic.proto.regenerate --out DIR  # write the generated files into DIR instead

Each schema `X.proto` in this folder yields `X_pb2.py` and `X_pb2.pyi`. The schemas are compiled
as if they lived at `systolic/proto/X.proto`, so that

- the descriptor's registered file name is `systolic/proto/X.proto` wherever the repository is
  checked out (the output is byte-for-byte reproducible), and
- a schema importing another one writes `import "systolic/proto/onnx_ir.proto";` and the
  generated module imports `from systolic.proto import onnx_ir_pb2`, which works once installed.

The compiler is the one bundled with grpcio-tools `GRPCIO_TOOLS` (pinned in pyproject.toml,
extras `dev` and `test`), so the generated code does not change from one machine to another;
another version is refused. It is the oldest protoc of protobuf major 6, whose code declares
gencode `GENCODE_VERSION`: under protobuf's cross-version runtime guarantee, code generated for
major V runs on runtimes of majors V and V + 1 that are not older than the code, so the
committed code runs on protobuf >= 6.30.0, < 8 (the core requirement in pyproject.toml).
"""

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path

SCHEMA_FOLDER = Path(__file__).resolve().parent
"""Where the `.proto` schemas and the committed generated modules live."""

IMPORT_PREFIX = Path("systolic", "proto")
"""The path under the include root at which the schemas are compiled."""

GRPCIO_TOOLS = "1.72.1"
"""The grpcio-tools release whose protoc generates the committed code."""

GENCODE_VERSION = (6, 30, 0)
"""The protobuf version that code declares (`ValidateProtobufRuntimeVersion`)."""


class RegenerationError(RuntimeError):
    """protoc is missing or rejected a schema."""


def schemas(folder: Path = SCHEMA_FOLDER) -> list[Path]:
    """Return every `.proto` schema in `folder`, sorted by name."""
    return sorted(folder.glob("*.proto"))


def generated_names(schema: Path) -> tuple[str, str]:
    """Return the file names of the module and the stub generated from `schema`."""
    return f"{schema.stem}_pb2.py", f"{schema.stem}_pb2.pyi"


def generate(out_dir: Path, folder: Path = SCHEMA_FOLDER) -> list[Path]:
    """Compile every schema of `folder` into `out_dir`; return the files written, sorted.

    Raises RegenerationError if grpcio-tools is not installed, is not release `GRPCIO_TOOLS`,
    or protoc reports an error.
    """
    try:
        from grpc_tools import protoc  # type: ignore[import-untyped]
    except ImportError as err:
        raise RegenerationError(
            "grpcio-tools is not installed; install it with `pip install -e .[dev]`"
        ) from err
    installed = version("grpcio-tools")
    if installed != GRPCIO_TOOLS:
        raise RegenerationError(
            f"grpcio-tools {installed} is installed, but the committed code comes from "
            f"{GRPCIO_TOOLS} (the oldest protobuf 6 gencode, which runs on protobuf 6 and 7): "
            f"pip install grpcio-tools=={GRPCIO_TOOLS}"
        )

    sources = schemas(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        include_root = Path(tmp, "include")
        staged = include_root / IMPORT_PREFIX
        staged.mkdir(parents=True)
        for schema in sources:
            shutil.copyfile(schema, staged / schema.name)
        build = Path(tmp, "build")
        build.mkdir()
        well_known_types = str(files("grpc_tools") / "_proto")
        arguments = [
            "grpc_tools.protoc",
            f"-I{include_root}",
            f"-I{well_known_types}",
            f"--python_out={build}",
            f"--pyi_out={build}",
            *(str(IMPORT_PREFIX / schema.name) for schema in sources),
        ]
        if sources and protoc.main(arguments) != 0:
            raise RegenerationError(f"protoc failed on {', '.join(s.name for s in sources)}")
        written = []
        for schema in sources:
            for name in generated_names(schema):
                target = out_dir / name
                shutil.copyfile(build / IMPORT_PREFIX / name, target)
                written.append(target)
    return sorted(written)


def stale_files(committed_dir: Path = SCHEMA_FOLDER, folder: Path = SCHEMA_FOLDER) -> list[str]:
    """Return the names of generated files in `committed_dir` that differ from a fresh generation
    of the schemas in `folder` (missing files count as stale)."""
    with tempfile.TemporaryDirectory() as tmp:
        stale = []
        for fresh in generate(Path(tmp), folder):
            committed = committed_dir / fresh.name
            if not committed.is_file() or committed.read_bytes() != fresh.read_bytes():
                stale.append(fresh.name)
        return stale


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m systolic.proto.regenerate", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="only report whether the files in --out are stale"
    )
    parser.add_argument(
        "--out", type=Path, default=SCHEMA_FOLDER, help="folder to write into (default: proto/)"
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            stale = stale_files(args.out)
            for name in stale:
                print(f"stale: {name} (run `python -m systolic.proto.regenerate`)")
            return 1 if stale else 0
        for path in generate(args.out):
            print(f"wrote {path}")
    except RegenerationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
