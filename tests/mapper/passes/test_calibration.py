"""Calibration runs the float model once per feed, and only when a float model is quantized:
the Softmax row floors are taken in the same runs (`calibrate(..., also=RowFloors(...))`),
a quantized model is never run, `systolic compile` of it neither, and `systolic inspect`
never calibrates."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from systolic.commands.cli import main
from systolic.ir import Model
from systolic.mapper.importer import load_model
from systolic.mapper.passes import calibration, softmax_ranges
from systolic.mapper.passes.calibration import RANDOM_SAMPLES, calibrate, random_calibration
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.softmax_ranges import RowFloors, softmax_row_floors

MODELS = Path(__file__).parents[2] / "models"


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every whole-model reference run the passes make (by the running module)."""
    seen: list[str] = []
    for module in (calibration, softmax_ranges):
        original: Callable[..., Any] = module.run_model

        def counted(*args: Any, _original: Callable[..., Any] = original,
                    _name: str = module.__name__, **kwargs: Any) -> Any:  # fmt: skip
            seen.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, "run_model", counted)
    return seen


def test_a_float_model_with_a_quantized_softmax_runs_once_per_feed(runs: list[str]) -> None:
    run_passes(load_model(MODELS / "attn_float.onnx"))
    assert runs == [calibration.__name__] * RANDOM_SAMPLES


@pytest.mark.parametrize("name", ["attn_qdq", "lenet_qop", "mlp_qdq"])
def test_a_quantized_model_is_never_run(name: str, runs: list[str]) -> None:
    run_passes(load_model(MODELS / f"{name}.onnx"))
    assert runs == []


def test_compile_of_a_quantized_model_runs_no_calibration(
    runs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "lenet.prog"
    assert main(["compile", str(MODELS / "lenet_qdq.onnx"), "-o", str(out), "--quiet"]) == 0
    assert out.exists() and runs == []


def test_inspect_of_a_float_model_runs_no_calibration(
    runs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(MODELS / "attn_float.onnx"), "--array", "4x4"]) == 0
    out = capsys.readouterr().out
    assert "calibration:    float model: units decided without calibration" in out
    assert runs == []


def _softmax_input_model() -> tuple[Model, list[Any]]:
    model = load_model(MODELS / "attn_float.onnx")
    softmaxes = [node for node in model.graph.nodes if node.op_type == "Softmax"]
    assert softmaxes
    return model, softmaxes


def test_the_floors_taken_during_calibration_equal_a_separate_run() -> None:
    model, softmaxes = _softmax_input_model()
    feeds = random_calibration(model.graph, seed=3)[:2]
    floors = RowFloors(softmaxes)
    names = [out for node in model.graph.nodes for out in node.outputs if out]
    ranges = calibrate(model, feeds, names, also=floors)
    assert floors.floors == softmax_row_floors(model, feeds, softmaxes)
    assert set(floors.floors) == {node.inputs[0] for node in softmaxes}
    for name, floor in floors.floors.items():
        assert ranges[name][0] <= floor + softmax_ranges.EXP_CUTOFF <= ranges[name][1]
        assert np.isfinite(floor)


def test_no_feed_no_run(runs: list[str]) -> None:
    model, softmaxes = _softmax_input_model()
    floors = RowFloors(softmaxes)
    assert calibrate(model, [], ["x"], also=floors) == {}
    assert floors.floors == {} and runs == []
