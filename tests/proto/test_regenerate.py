"""The committed bindings are exactly what `python -m systolic.proto.regenerate` produces."""

import re
import tomllib
from pathlib import Path

import pytest

from systolic.proto import regenerate

pytest.importorskip("grpc_tools", reason="grpcio-tools (extra `dev`/`test`) is not installed")

PROTO_FOLDER = Path(regenerate.__file__).resolve().parent


def test_every_schema_is_generated(tmp_path: Path) -> None:
    written = regenerate.generate(tmp_path)
    expected = sorted(
        tmp_path / name
        for schema in regenerate.schemas()
        for name in regenerate.generated_names(schema)
    )
    assert written == expected
    assert tmp_path / "onnx_ir_pb2.py" in written


def test_committed_files_match_a_fresh_generation(tmp_path: Path) -> None:
    for fresh in regenerate.generate(tmp_path):
        committed = PROTO_FOLDER / fresh.name
        assert committed.read_bytes() == fresh.read_bytes(), (
            f"{committed.name} is stale: run `python -m systolic.proto.regenerate`"
        )


def test_check_mode_passes_on_the_committed_files() -> None:
    assert regenerate.main(["--check"]) == 0


def test_check_mode_reports_a_stale_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    regenerate.main(["--out", str(tmp_path)])
    capsys.readouterr()
    stub = tmp_path / "onnx_ir_pb2.pyi"
    stub.write_bytes(stub.read_bytes() + b"# edited by hand\n")
    assert regenerate.main(["--check", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().out == (
        "stale: onnx_ir_pb2.pyi (run `python -m systolic.proto.regenerate`)\n"
    )


def test_descriptor_file_name_does_not_depend_on_the_checkout() -> None:
    from systolic.proto import ModelProto

    assert ModelProto.DESCRIPTOR.file.name == "systolic/proto/onnx_ir.proto"
    assert ModelProto.DESCRIPTOR.full_name == "systolic.onnx.ModelProto"


def test_a_schema_importing_another_gets_an_installable_import(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "onnx_ir.proto").write_bytes((PROTO_FOLDER / "onnx_ir.proto").read_bytes())
    (schemas / "extra.proto").write_text(
        'syntax = "proto2";\n'
        "package systolic.extra;\n"
        'import "systolic/proto/onnx_ir.proto";\n'
        "message Wrapper { optional systolic.onnx.ModelProto model = 1; }\n"
    )
    out = tmp_path / "out"
    written = regenerate.generate(out, schemas)
    assert [path.name for path in written] == [
        "extra_pb2.py",
        "extra_pb2.pyi",
        "onnx_ir_pb2.py",
        "onnx_ir_pb2.pyi",
    ]
    module = (out / "extra_pb2.py").read_text()
    assert "from systolic.proto import onnx_ir_pb2 as " in module
    assert "# source: systolic/proto/extra.proto" in module


def test_a_broken_schema_is_reported(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "broken.proto").write_text('syntax = "proto2";\nmessage M { optional int32 = 1; }\n')
    with pytest.raises(regenerate.RegenerationError, match=r"^protoc failed on broken\.proto$"):
        regenerate.generate(tmp_path / "out", schemas)


def test_another_grpcio_tools_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(regenerate, "version", lambda name: "1.85.1")
    with pytest.raises(regenerate.RegenerationError, match=(
            rf"^grpcio-tools 1\.85\.1 is installed, but the committed code comes from "
            rf"{regenerate.GRPCIO_TOOLS}.*: pip install grpcio-tools=={regenerate.GRPCIO_TOOLS}$")):
        regenerate.generate(tmp_path)


def test_committed_code_declares_the_gencode_version() -> None:
    major, minor, patch = regenerate.GENCODE_VERSION
    for schema in regenerate.schemas():
        text = (PROTO_FOLDER / regenerate.generated_names(schema)[0]).read_text()
        assert f"# Protobuf Python Version: {major}.{minor}.{patch}\n" in text
        assert f"Domain.PUBLIC,\n    {major},\n    {minor},\n    {patch},\n" in text


def test_pyproject_states_a_range_the_gencode_allows() -> None:
    """Gencode of major V runs on runtimes V and V + 1, never older than the gencode."""
    pyproject = tomllib.loads((PROTO_FOLDER.parent / "pyproject.toml").read_text())
    project = pyproject["project"]
    protobuf = next(d for d in project["dependencies"] if d.startswith("protobuf"))
    match = re.fullmatch(r"protobuf>=(\d+)\.(\d+)\.(\d+),<(\d+)", protobuf)
    assert match, protobuf
    lowest, upper = tuple(int(part) for part in match.groups()[:3]), int(match.group(4))
    assert lowest >= regenerate.GENCODE_VERSION
    assert upper == regenerate.GENCODE_VERSION[0] + 2
    for extra in ("dev", "test"):
        assert f"grpcio-tools=={regenerate.GRPCIO_TOOLS}" in project["optional-dependencies"][extra]
