"""`systolic compile`: program files from ONNX models, one-line errors, nothing written."""

from pathlib import Path

import numpy as np
import pytest

from systolic.commands.cli import main
from systolic.commands.compile import integer_model
from systolic.config import Dataflow
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import CompiledModel
from systolic.reference.executor import run_model
from systolic.simulation.runner import simulate

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_compile_writes_a_program_that_simulates_like_the_reference(tmp_path, capsys):  # type: ignore[no-untyped-def]
    out = tmp_path / "sub" / "lenet.pb"
    status = main(["compile", str(MODELS / "lenet_qop.onnx"), "-o", str(out), "--array", "4x8",
                   "--dataflow", "os", "--mem-latency", "5"])  # fmt: skip
    assert status == 0
    text = capsys.readouterr().out
    assert f"wrote {out}: 4x8 os, 9 layers (2 on the host)" in text
    compiled = CompiledModel.load(out)
    config = compiled.config
    assert (config.rows, config.cols, config.dataflow, config.mem_latency) == (4, 8, Dataflow.OS, 5)
    assert [layer.unit for layer in compiled.layers].count(LayerUnit.ARRAY) == 4
    from systolic.mapper.importer import load_model

    model = integer_model(load_model(MODELS / "lenet_qop.onnx"))
    x = np.load(MODELS / "lenet_inputs.npz")["input_1"]
    name = compiled.inputs[0].name
    np.testing.assert_array_equal(simulate(compiled, {name: x})["output"],
                                  run_model(model, {name: x})["output"])  # fmt: skip


def test_quiet_prints_nothing(tmp_path, capsys):  # type: ignore[no-untyped-def]
    out = tmp_path / "mlp.pb"
    assert main(["compile", str(MODELS / "mlp_qdq.onnx"), "-o", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert out.stat().st_size > 0


@pytest.mark.parametrize(("args", "message"), [
    (["--array", "4x"], r"array size '4x' is not of the form RxC"),
    (["--dataflow", "xs"], r"unknown dataflow 'xs'"),
    (["--spad-kib", "0"], r"spad_kib must be a positive whole number of KiB"),
    (["--mem-latency", "2000"], r"mem_latency must be a whole number of cycles"),
])  # fmt: skip
def test_bad_options_are_one_line_and_write_nothing(tmp_path, capsys, args, message):  # type: ignore[no-untyped-def]
    out = tmp_path / "p.pb"
    assert main(["compile", str(MODELS / "mlp_qop.onnx"), "-o", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("systolic: error: ")
    assert __import__("re").search(message, err)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_a_bad_model_is_one_line_and_writes_nothing(tmp_path, capsys):  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    out = tmp_path / "p.pb"
    assert main(["compile", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("systolic: error: ")
    assert not out.exists()
    assert main(["compile", str(tmp_path / "missing.onnx"), "-o", str(out)]) == 2
    assert not out.exists()
