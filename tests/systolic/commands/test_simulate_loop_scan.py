"""`systolic simulate` on models with a Loop and a Scan: the Loop of constant trip count is
unrolled and its MatMuls run on the array, so is a Scan of static length; a Scan too long to
unroll runs on the host (its body's MACs counted as host MACs in the coverage), and so do the
MACs of a host If's larger branch; all bit-exact."""

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from systolic.commands.cli import main
from systolic.mapper.passes.unroll_loop import MAX_TRIPS

from ...support.loop_scan_models import counted_loop, counter_loop, scan_sum, sliced_loop


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


def test_a_scan_is_unrolled_onto_the_array(tmp_path: Path) -> None:
    model = scan_sum(rows=5, width=4, input_axis=1, reverse_in=True, output_axis=1,
                     matmul=True)
    status, report = _simulate(tmp_path, model)
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    assert report["checks"]["quantization"]["cosine_similarity"] > 0.999
    matmuls = [lay for lay in report["layers"] if lay["op"] == "QMatMul"]
    assert len(matmuls) == 5 and all(lay["unit"] == "array" for lay in matmuls)
    assert (report["coverage"]["array_macs"], report["coverage"]["host_macs"]) == (80, 0)


def test_a_scan_too_long_to_unroll_runs_on_the_host_bit_exact(tmp_path: Path) -> None:
    status, report = _simulate(tmp_path, scan_sum(rows=MAX_TRIPS + 1, width=4, matmul=True))
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    (layer,) = report["layers"]
    assert (layer["op"], layer["unit"]) == ("Scan", "host")
    assert report["coverage"]["host_macs"] == (MAX_TRIPS + 1) * 16


def _data_dependent_if() -> onnx.ModelProto:
    """x [2,3] -> If(ReduceSum(x) > 0): then MatMul(x, W [3,5]) (30 MACs), else
    MatMul(x, V [3,1]) + zeros [1,5] (6 MACs): cond known only when running."""
    f, h = onnx.TensorProto.FLOAT, onnx.helper
    big = h.make_graph([h.make_node("MatMul", ["x", "W"], ["b"])], "big", [],
                       [h.make_tensor_value_info("b", f, [2, 5])])
    small = h.make_graph([h.make_node("MatMul", ["x", "V"], ["s1"]),
                          h.make_node("Add", ["s1", "Z"], ["s"])], "small", [],
                         [h.make_tensor_value_info("s", f, [2, 5])])
    rng = np.random.default_rng(4)
    graph = h.make_graph(
        [h.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
         h.make_node("Greater", ["total", "zero"], ["c"]),
         h.make_node("If", ["c"], ["y"], name="choose", then_branch=big, else_branch=small)],
        "g", [h.make_tensor_value_info("x", f, [2, 3])],
        [h.make_tensor_value_info("y", f, [2, 5])],
        [numpy_helper.from_array(rng.standard_normal((3, 5)).astype(np.float32), "W"),
         numpy_helper.from_array(rng.standard_normal((3, 1)).astype(np.float32), "V"),
         numpy_helper.from_array(np.zeros((1, 5), np.float32), "Z"),
         numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def test_a_host_if_counts_its_larger_branch_as_host_macs(tmp_path: Path) -> None:
    status, report = _simulate(tmp_path, _data_dependent_if())
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    (layer,) = [lay for lay in report["layers"] if lay["op"] == "If"]
    assert (layer["unit"], layer["macs"]) == ("host", 2 * 5 * 3)
    assert report["coverage"]["host_macs"] == 30


def test_a_host_while_loop_counts_its_trips_as_host_macs(tmp_path: Path) -> None:
    # too long to unroll: its condition, decided by constants, still gives the count
    status, report = _simulate(tmp_path, counter_loop(MAX_TRIPS + 1))
    assert status == 0 and report["checks"]["reference_bit_exact"] is True
    (layer,) = report["layers"]
    assert (layer["op"], layer["unit"], layer["macs"]) == ("Loop", "host", (MAX_TRIPS + 1) * 16)
    assert report["coverage"]["host_macs"] == (MAX_TRIPS + 1) * 16
