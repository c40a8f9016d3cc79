"""Strings from a model reach the terminal escaped: no command lets a name, producer string,
doc string or metadata entry drive the terminal or forge a line; JSON keeps them exact."""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.commands.cli import main

EVIL = "\x1b]0;owned\x07\x1b[2J\r\nsystolic: error: fake\x9b"


def _hostile_model(path: Path) -> Path:
    """A float MatMul + Relu whose every name and descriptive string ends in EVIL."""
    weight = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x" + EVIL, "W" + EVIL], ["h" + EVIL], name="mm" + EVIL),
        helper.make_node("Relu", ["h" + EVIL], ["y" + EVIL], name="relu" + EVIL),
    ]
    graph = helper.make_graph(
        nodes,
        "g" + EVIL,
        [helper.make_tensor_value_info("x" + EVIL, TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y" + EVIL, TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(weight, "W" + EVIL)],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="p" + EVIL,
        producer_version="v" + EVIL,
        doc_string="d" + EVIL,
        domain="dom" + EVIL,
    )
    model.ir_version = 8
    helper.set_model_props(model, {"k" + EVIL: "v" + EVIL})
    onnx.save(model, path)
    return path


def _assert_safe(text: str) -> None:
    for bad in ("\x1b", "\r", "\x07", "\x9b"):
        assert bad not in text, repr(text)
    assert not any(line.startswith("systolic: error: fake") for line in text.splitlines())


@pytest.mark.parametrize(
    "command",
    [
        ["inspect"],
        ["compile", "-o", "{tmp}/p.prog"],
        ["simulate", "--backend", "model", "--no-onnxruntime"],
        ["compare", "--backend", "model", "--array", "4x4", "--dataflow", "ws"],
    ],
    ids=lambda c: c[0],
)
def test_every_command_escapes_names_from_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    model = _hostile_model(tmp_path / "hostile.onnx")
    argv = [command[0], str(model), *(a.format(tmp=tmp_path) for a in command[1:])]
    assert main(argv) == 0
    captured = capsys.readouterr()
    _assert_safe(captured.out)
    _assert_safe(captured.err)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\r\\nsystolic: error: fake\\x9b" in captured.out


def test_disasm_escapes_names_from_the_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _hostile_model(tmp_path / "hostile.onnx")
    assert main(["compile", str(model), "-o", str(tmp_path / "p.prog"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["disasm", str(tmp_path / "p.prog")]) == 0
    captured = capsys.readouterr()
    _assert_safe(captured.out)
    assert "# layer 1 'mm\\x1b]0;owned" in captured.out


def test_json_keeps_the_exact_strings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _hostile_model(tmp_path / "hostile.onnx")
    assert main(["inspect", str(model), "--json", "-"]) == 0
    out = capsys.readouterr().out
    _assert_safe(out)
    report = json.loads(out)
    assert report["producer"]["name"] == "p" + EVIL
    assert report["metadata"] == {"k" + EVIL: "v" + EVIL}
    assert [row["name"] for row in report["nodes"]] == ["mm" + EVIL, "relu" + EVIL]


def test_an_error_naming_a_hostile_value_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _hostile_model(tmp_path / "hostile.onnx")
    status = main(["compile", str(model), "-o", str(tmp_path / "p.prog"), "--input-shape", "q=1"])
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert status == 2 and all(line.startswith("systolic: ") for line in lines), err
    assert [line for line in lines if line.startswith("systolic: error: ")] == [lines[-1]]
    assert "not an input of the model (inputs: 'x\\x1b]0;owned" in lines[-1]
    _assert_safe(err)


def test_compare_escapes_topology_layer_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topology = tmp_path / "t.csv"
    topology.write_text(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
        "Num Filter, Strides,\n" + EVIL.replace("\r\n", "\t") + ",6,6,3,3,2,2,1,\n"
    )
    argv = ["compare", "--topology", str(topology), "--backend", "model", "--array", "4x4",
            "--dataflow", "ws"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    _assert_safe(captured.out)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\tsystolic: error: fake\\x9b" in captured.out
