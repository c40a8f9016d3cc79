"""`systolic simulate` on models with a Loop and a Scan: the Loop of constant trip count is
unrolled and its MatMuls run on the array, the Scan runs on the host (its body's MACs counted
as host MACs in the coverage), both bit-exact."""

import json
from pathlib import Path

import onnx

from systolic.commands.cli import main

from ...support.loop_scan_models import counted_loop, scan_sum, sliced_loop


def _simulate(tmp_path: Path, model: onnx.ModelProto) -> tuple[int, dict]:
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    target = tmp_path / "report.json"
    status = main(["simulate", str(path), "--backend", "model", "--json", str(target),
                   "--quiet"])
    return status, json.loads(target.read_text())


def test_a_counted_loop_is_unrolled_onto_the_array(tmp_path: Path) -> None:
    status, report = _simulate(tmp_path, counted_loop(3))
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    matmuls = [lay for lay in report["layers"] if lay["op"] == "QMatMul"]
    assert len(matmuls) == 3 and all(lay["unit"] == "array" for lay in matmuls)
    assert (report["coverage"]["array_macs"], report["coverage"]["host_macs"]) == (48, 0)


def test_torch_s_sliced_loop_runs_on_the_array(tmp_path: Path) -> None:
    status, report = _simulate(tmp_path, sliced_loop(rows=4))
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    assert report["checks"]["quantization"]["cosine_similarity"] > 0.999
    assert (report["coverage"]["array_macs"], report["coverage"]["host_macs"]) == (1536, 0)


def test_a_scan_runs_on_the_host_bit_exact(tmp_path: Path) -> None:
    model = scan_sum(rows=5, width=4, input_axis=1, reverse_in=True, output_axis=1,
                     matmul=True)
    status, report = _simulate(tmp_path, model)
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    assert report["checks"]["onnxruntime_max_abs_diff"] < 1e-5
    (layer,) = report["layers"]
    assert (layer["op"], layer["unit"], layer["macs"]) == ("Scan", "host", 5 * 4 * 4)
    assert (report["coverage"]["host_macs"], report["coverage"]["array_macs"]) == (80, 0)
