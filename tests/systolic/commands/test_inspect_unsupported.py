"""`systolic inspect` on a model with unsupported operators (marked, with the reason, not
refused) and on a dynamic model bound with --input-shape (issue 13)."""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.commands.cli import main
from systolic.errors import UnsupportedError
from systolic.mapper.importer import load_model


def _model(folder: Path, ops: tuple[str, ...]) -> Path:
    weights = np.random.default_rng(9).standard_normal((4, 3, 3, 3)).astype(np.float32)
    names = ["c", *(f"t{i}" for i in range(len(ops)))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv")]
    nodes += [helper.make_node(op, [names[i]], [names[i + 1]], name=f"n{i}")
              for i, op in enumerate(ops)]  # fmt: skip
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, ["N", 4, 8, 8])],
        initializer=[numpy_helper.from_array(weights, "w")])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_every_unsupported_operator_is_named_in_one_line(tmp_path: Path) -> None:
    path = _model(tmp_path, ("Foo", "Relu", "Foo", "Bar"))
    with pytest.raises(UnsupportedError, match=r"^unsupported operators: Foo \(2 nodes\), Bar "
                                               r"\(1 node\); node 'n0': operator ai\.onnx\.Foo:13 "
                                               r"is not supported: neither"):
        load_model(path)


def test_inspect_marks_unsupported_nodes(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = _model(tmp_path, ("Foo", "Relu", "Bar"))
    assert main(["inspect", str(path), "--json", str(tmp_path / "r.json")]) == 0
    rows = {row["name"]: row for row in json.loads((tmp_path / "r.json").read_text())["nodes"]}
    assert {name: row["unit"] for name, row in rows.items()} == {
        "conv": "host", "n0": "unsupported", "n1": "host", "n2": "unsupported"}
    assert rows["n0"]["reason"] == (
        "operator ai.onnx.Foo:13 is not supported: neither the accelerator nor the host "
        "reference implements it, so it cannot run even on the host: replace it in the model "
        "or export with supported operators")
    assert rows["conv"]["reason"].startswith("not mapped: ")


def test_inspect_input_shape_binds_dynamic_inputs(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _model(tmp_path, ("Relu",))
    assert main(["inspect", str(path), "--input-shape", "x=2x3x8x8"]) == 0
    out = capsys.readouterr().out
    assert "  x: f32[2,3,8,8]" in out
    assert out.rstrip().endswith(f"totals: 2 nodes, {2 * 4 * 8 * 8 * 27:,} MACs, 108 parameters")
    row = next(line for line in out.splitlines() if line.startswith("conv"))
    assert row.split()[4] == "array"


def test_inspect_input_shape_names_a_real_input(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(_model(tmp_path, ("Relu",))), "--input-shape", "z=1x3"]) != 0
    assert "--input-shape names 'z', not an input of the model (inputs: 'x')" in (
        capsys.readouterr().err)
