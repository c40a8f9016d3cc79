"""`--max-memory` for the whole command: the importer's limits and the reference runs' budget."""

import argparse
from pathlib import Path

import onnx
import pytest
from onnx import numpy_helper

from systolic.commands.cli import main
from systolic.commands.model_loading import command_budget
from systolic.reference.executor import DEFAULT_MAX_LIVE_BYTES, current_budget

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_command_budget_follows_max_memory() -> None:
    with command_budget(argparse.Namespace(max_memory="1k")):
        assert current_budget() == 1000
    assert current_budget() == DEFAULT_MAX_LIVE_BYTES
    with command_budget(argparse.Namespace()):  # a command without the option
        assert current_budget() == DEFAULT_MAX_LIVE_BYTES


def test_a_run_past_max_memory_is_exit_2_naming_the_tensors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A float model whose constants fit `--max-memory` exactly loads, but its calibration
    (a reference run) holds the constants and an input at once: exit 2, one line naming the
    largest tensors, nothing written."""
    path = MODELS / "lenet_float.onnx"
    constants = sum(numpy_helper.to_array(t).nbytes for t in onnx.load(path).graph.initializer)
    output = tmp_path / "lenet.bin"
    status = main(["compile", str(path), "-o", str(output), "--max-memory", str(constants)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert err.startswith("systolic: error: running the graph holds ")
    assert f"more than the limit of {constants} (--max-memory); the largest: 'fc1_weight'" in err
    assert not output.exists()
