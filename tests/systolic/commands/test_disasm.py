"""`systolic disasm`: the listing of a program file, read back by the assembler."""

from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.isa.assembler import parse_text
from systolic.mapper.lowering import CompiledModel

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="module")
def program_file(tmp_path_factory):  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("disasm") / "resnet.pb"
    assert main(["compile", str(MODELS / "resnet_tiny_qop.onnx"), "-o", str(path), "--quiet",
                 "--array", "4x4"]) == 0  # fmt: skip
    return path


def test_the_listing_shows_config_memory_and_layers(program_file, capsys):  # type: ignore[no-untyped-def]
    assert main(["disasm", str(program_file)]) == 0
    text = capsys.readouterr().out
    program = CompiledModel.load(program_file).program
    lines = text.splitlines()
    assert lines[0] == (f"# systolic program: 4x4 ws, {len(program.instructions)} instructions, "
                        f"{len(program.layers)} layers")  # fmt: skip
    assert (
        lines[1].startswith("# config: rows=4 cols=4 dataflow=ws") and "mem_latency=8" in lines[1]
    )
    assert "# memory map:" in lines
    for tensor in program.tensors:
        assert f" {tensor.name}: {tensor.dtype.name} {list(tensor.shape)}" in text
    for index, layer in enumerate(program.layers):
        assert f"# layer {index} {layer.name!r}: {layer.op} on {layer.unit.value}" in text
    assert "#   host: %" in text  # the host steps' nodes
    assert parse_text(text) == program.instructions  # everything else is a comment


def test_a_file_that_is_not_a_program_is_one_line(tmp_path, capsys):  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.pb"
    bad.write_bytes((MODELS / "mlp_qop.onnx").read_bytes())
    assert main(["disasm", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("systolic: error: ")
    assert main(["disasm", str(tmp_path / "missing.pb")]) == 2
