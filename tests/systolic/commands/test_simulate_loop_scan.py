"""`systolic simulate` on models with a Loop and a Scan: they run on the host, bit-exact, and
the MACs inside their bodies count as host MACs in the coverage."""

import json
from pathlib import Path

import onnx
import pytest

from systolic.commands.cli import main

from ...support.loop_scan_models import counted_loop, scan_sum


def _simulate(tmp_path: Path, model: onnx.ModelProto) -> tuple[int, dict]:
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    target = tmp_path / "report.json"
    status = main(["simulate", str(path), "--backend", "model", "--json", str(target),
                   "--quiet"])
    return status, json.loads(target.read_text())


@pytest.mark.parametrize(("model", "op", "macs"), [
    (counted_loop(3), "Loop", 3 * 4 * 4),
    (scan_sum(rows=5, width=4, input_axis=1, reverse_in=True, output_axis=1, matmul=True),
     "Scan", 5 * 4 * 4),
])
def test_loop_and_scan_run_on_the_host_bit_exact(tmp_path: Path, model: onnx.ModelProto,
                                                 op: str, macs: int) -> None:
    status, report = _simulate(tmp_path, model)
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    assert report["checks"]["onnxruntime_max_abs_diff"] < 1e-5
    (layer,) = report["layers"]
    assert (layer["op"], layer["unit"], layer["macs"]) == (op, "host", macs)
    assert (report["coverage"]["host_macs"], report["coverage"]["array_macs"]) == (macs, 0)
