"""`systolic simulate` and `systolic inspect` on models with If: a condition known from the
input's shape folds, and the chosen branch's Conv or MatMul runs on the array, bit-exact; a
condition known only when running leaves the If on the host, bit-exact too."""

import json
from pathlib import Path

import onnx
import pytest

from systolic.commands.cli import main

from ...support.if_models import if_of_shape, if_of_values


def _simulate(tmp_path: Path, model: onnx.ModelProto) -> tuple[int, dict]:
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    target = tmp_path / "report.json"
    status = main(["simulate", str(path), "--backend", "model", "--json", str(target),
                   "--quiet"])
    return status, json.loads(target.read_text())


@pytest.mark.parametrize(("matmul", "op"), [(False, "QConv"), (True, "QMatMul")])
def test_the_chosen_branch_runs_on_the_array(tmp_path: Path, matmul: bool, op: str) -> None:
    status, report = _simulate(tmp_path, if_of_shape(matmul=matmul))
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    layer = next(lay for lay in report["layers"] if lay["name"] == "choose/layer")
    assert (layer["op"], layer["unit"]) == (op, "array") and layer["macs"] > 0
    assert all(lay["op"] != "If" for lay in report["layers"])


def test_a_data_dependent_if_runs_on_the_host(tmp_path: Path) -> None:
    status, report = _simulate(tmp_path, if_of_values())
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    units = {lay["name"]: (lay["op"], lay["unit"]) for lay in report["layers"]}
    assert units["choose"] == ("If", "host") and units["conv"] == ("QConv", "array")


def test_inspect_shows_the_folded_and_the_host_if(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, model in (("shape", if_of_shape()), ("values", if_of_values())):
        onnx.save(model, tmp_path / f"{name}.onnx")
        assert main(["inspect", str(tmp_path / f"{name}.onnx")]) == 0
    out = capsys.readouterr().out
    rows = [line.split(None, 5) for line in out.splitlines() if line.startswith("choose ")]
    assert [(row[1], row[4]) for row in rows] == [("ai.onnx.If:16", "none"),
                                                  ("ai.onnx.If:16", "host")]
    assert "folded: cond is constant: its then_branch's 2 node(s) run in the main graph" in out
    assert "its cond is known only when running" in out
