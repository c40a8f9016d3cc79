"""`--without UNIT,...` on the commands (systolic/commands/config_args.py): an unknown unit is
one line and exit 2; `simulate --json` reports the layer of an absent unit as a host layer
with the reason as its note."""

import json
from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.config_units import OptionalUnit, absent_message

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.mark.parametrize("command", ["inspect", "simulate", "compile", "compare"])
def test_unknown_unit_is_a_one_line_error(command: str, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    extra = ["-o", str(tmp_path / "p.bin")] if command == "compile" else []
    assert main([command, str(MODELS / "mlp_qdq.onnx"), "--without", "softmax", *extra]) == 2
    error = capsys.readouterr().err.strip()
    assert error == ("systolic: error: --without 'softmax' is not an optional unit: use one or "
                     "more of row-unit, tables, separated by commas")


def test_simulate_json_shows_the_softmax_on_the_host(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    code = main(["simulate", str(MODELS / "attn_qdq.onnx"), "--backend", "model", "--array",
                 "4x4", "--without", "row-unit", "--no-onnxruntime", "--quiet",
                 "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["config"]["without"] == ["row-unit"]
    (softmax,) = [layer for layer in report["layers"] if layer["op"] == "QSoftmax"]
    assert softmax["unit"] == "host"
    assert softmax["note"] == absent_message(OptionalUnit.ROW_UNIT)
