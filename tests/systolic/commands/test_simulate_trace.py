"""`simulate --trace FILE.json`: the bundled example's run as a Chrome trace, written with the
other files; a wrong suffix is refused before the run."""

import json
from pathlib import Path

import pytest

from systolic.commands.cli import main


def test_trace_of_the_bundled_example(tmp_path: Path) -> None:
    trace, report = tmp_path / "run.json", tmp_path / "report.json"
    assert main(["simulate", "--backend", "model", "--no-onnxruntime", "--quiet",
                 "--trace", str(trace), "--json", str(report)]) == 0  # fmt: skip
    events = json.loads(trace.read_text())["traceEvents"]
    total = json.loads(report.read_text())["total_cycles"]
    slices = [e for e in events if e["ph"] == "X"]
    assert {e["name"] for e in slices} >= {"conv1_Conv", "fc2_Gemm"}
    assert max(e["ts"] + e["dur"] for e in slices) <= total
    assert [e["ts"] for e in events if e["name"] == "HALT"] == [total]


@pytest.mark.parametrize(("args", "message"), [
    (["--trace", "{tmp}/run.txt"], "--trace '{tmp}/run.txt' must name a .json file"),
    (["--trace", "{tmp}/a.json", "--json", "{tmp}/a.json"], "must name different files"),
])  # fmt: skip
def test_bad_trace_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                         message: str) -> None:  # fmt: skip
    assert main(["simulate", *(a.replace("{tmp}", str(tmp_path)) for a in args)]) == 2
    assert message.replace("{tmp}", str(tmp_path)) in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
