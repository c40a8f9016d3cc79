"""`systolic inspect`: the summary, its JSON, and one-line errors for every broken model."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.commands.cli import main
from systolic.commands.inspect import parse_size

BAD = Path(__file__).resolve().parents[1] / "data" / "bad_models"
MANIFEST = json.loads((BAD / "manifest.json").read_text())
CASES = sorted(MANIFEST["cases"])


def _model_file(folder: Path, name: str = "node-1") -> Path:
    weight = numpy_helper.from_array(np.ones((3, 4), dtype=np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w"], ["t"], name=name),
            helper.make_node("Relu", ["t"], ["y"], name="relu"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[weight],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13)],
        producer_name="tests",
        model_version=(2 << 48) | (1 << 32) | 7,
    )
    helper.set_model_props(model, {"model_author": "Ada"})
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_text_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(_model_file(tmp_path))]) == 0
    out, err = capsys.readouterr()
    assert "model version:  2.1.7" in out
    assert "metadata:       model_author = Ada" in out
    assert "  x: f32[2,3]" in out and "  y: f32[2,4]" in out
    row = next(line for line in out.splitlines() if line.startswith("node-1"))
    assert row.split()[:5] == ["node-1", "ai.onnx.Gemm:13", "f32[2,4]", "24", "array"]
    assert out.rstrip().endswith("totals: 2 nodes, 24 MACs, 12 parameters")
    assert err == ""  # 'node-1' is only not a C90 identifier: C90NameWarning is off by default


def test_json_summary_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "summary.json"
    assert main(["inspect", str(_model_file(tmp_path, "gemm")), "--json", str(target)]) == 0
    report = json.loads(target.read_text())
    assert report["totals"] == {"nodes": 2, "macs": 24, "parameters": 12}
    assert report["model_version"] == {"value": (2 << 48) | (1 << 32) | 7, "text": "2.1.7"}
    assert [(n["op"], n["macs"], n["unit"]) for n in report["nodes"]] == [
        ("ai.onnx.Gemm:13", 24, "array"),
        ("ai.onnx.Relu:13", 0, "array"),
    ]
    assert capsys.readouterr().err == ""


def test_json_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(_model_file(tmp_path, "gemm")), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["opsets"] == [{"domain": "ai.onnx", "version": 13}]


def test_max_memory_limits_tensors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(_model_file(tmp_path, "gemm")), "--max-memory", "40"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(
        r"systolic: error: initializer 'w' of shape \[3, 4\] needs 48 bytes, more than the limit of 40: .*\n",
        err,
    )


@pytest.mark.parametrize(
    ("text", "size"), [("4096", 4096), ("2KiB", 2048), ("1.5GB", 1_500_000_000), ("8GiB", 8 << 30)]
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_bad_size_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(_model_file(tmp_path)), "--max-memory", "lots"]) == 2
    assert capsys.readouterr().err == (
        "systolic: error: --max-memory 'lots' is not a size: write bytes or a number with a unit "
        "such as 512MiB, 8GiB or 2GB\n"
    )


@pytest.mark.parametrize("case", [case for case in CASES if case != "unsupported_op.onnx"])
def test_bad_model_is_one_line_exit_2_nothing_written(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out.json"
    status = main(["inspect", str(BAD / case), "--json", str(target)])
    out, err = capsys.readouterr()
    assert status == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("systolic: error: ")
    assert re.search(MANIFEST["cases"][case]["match"], lines[0]), lines[0]
    assert "Traceback" not in err and out == ""
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_unsupported_operator_is_shown_marked(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Unlike the other bad models, inspect shows it: the user sees the whole model. (The
    bad-model corpus' NonMaxSuppression is implemented since session 9: Unique is not.)"""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Unique", ["r"], ["y"], name="unique")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (tmp_path / "unique.onnx").write_bytes(model.SerializeToString())
    assert main(["inspect", str(tmp_path / "unique.onnx")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "Unique" in line)
    assert "  unsupported  operator ai.onnx.Unique:" in row


def test_an_operator_whose_output_size_is_known_when_running_is_shown(
        capsys: pytest.CaptureFixture[str]) -> None:
    """NonMaxSuppression of computed boxes: its output's size depends on their values, so
    inspect shows it on the host with the shapes left to the declared types."""
    assert main(["inspect", str(BAD / "unsupported_op.onnx")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if "NonMaxSuppression" in line)
    assert "  host  " in row


@pytest.mark.parametrize("case", ["truncated.onnx", "cycle.onnx", "external_symlink/model.onnx"])
def test_bad_model_in_a_subprocess(case: str, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    result = subprocess.run(
        [sys.executable, "-m", "systolic.commands.cli", "inspect", str(BAD / case), "--json", str(target)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert re.search(MANIFEST["cases"][case]["match"], lines[0])
    assert not target.exists()


def _huge_constants_model(folder: Path, count: int = 3, gib: int = 6) -> Path:
    """A model of a few hundred bytes whose `count` float constants of `gib` GiB each are
    external data in sparse files (no disk space, no memory until read)."""
    size = gib << 30
    initializers = []
    for index in range(count):
        tensor = TensorProto(name=f"c{index}", data_type=TensorProto.FLOAT, dims=[size // 4],
                             data_location=TensorProto.EXTERNAL)
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", f"c{index}.bin"
        with open(folder / f"c{index}.bin", "wb") as handle:
            handle.truncate(size)
        initializers.append(tensor)
    names = ["x", *(f"v{index}" for index in range(count - 1)), "y"]
    nodes = [helper.make_node("Add", [names[i], f"c{i}"], [names[i + 1]], name=f"add{i}")
             for i in range(count)]
    value = [size // 4]
    graph = helper.make_graph(nodes, "huge", [helper.make_tensor_value_info("x", 1, value)],
                              [helper.make_tensor_value_info("y", 1, value)], initializers)
    path = folder / "huge.onnx"
    path.write_bytes(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path


def test_constants_are_described_without_being_decoded(tmp_path: Path) -> None:
    """Three 6 GiB constants (18 GiB, each under the 8 GiB default): `inspect` describes
    the model in seconds under a 2 GiB address-space limit; the mapper is not run, and each
    node says why (issue 11, point 3)."""
    path = _huge_constants_model(tmp_path)
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
    result = subprocess.run(
        [sys.executable, "-c", limit + "from systolic.commands.cli import main; "
         "raise SystemExit(main())", "inspect", str(path), "--json", "-"],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["totals"]["parameters"] == 3 * (6 << 30) // 4
    expected = (f"not mapped: the constants need {18 << 30} bytes together, more than "
                f"--max-memory ({8 << 30}); the largest: 'c0' ({6 << 30} bytes), 'c1' "
                f"({6 << 30} bytes), 'c2' ({6 << 30} bytes)")  # fmt: skip
    assert {node["reason"] for node in report["nodes"]} == {expected}
