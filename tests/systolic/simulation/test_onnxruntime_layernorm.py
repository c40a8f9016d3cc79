"""A quantized model's LayerNorm chains, run exactly by LAYERNORM, explain its difference from
onnxruntime (replay of onnxruntime's normalized values through our reference)."""

from pathlib import Path

import numpy as np
import pytest

from systolic.mapper.importer import load_model
from systolic.mapper.passes.pipeline import run_passes
from systolic.simulation import onnxruntime_layernorm
from systolic.simulation.onnxruntime_layernorm import layernorm_explains

pytest.importorskip("onnxruntime")

MODELS = Path(__file__).resolve().parents[2] / "models"


def _first_input(network: str) -> dict[str, np.ndarray]:
    with np.load(MODELS / "realistic" / f"{network}_inputs.npz") as data:
        return {key[: -len("_0")]: data[key] for key in data.files if key.endswith("_0")}


@pytest.fixture(scope="module")
def bert_qdq() -> tuple[bytes, object]:
    path = MODELS / "realistic" / "bert_tiny_qdq.onnx"
    integer, _ = run_passes(load_model(path))
    return path.read_bytes(), integer


def test_the_normalized_values_explain_bert_qdq(bert_qdq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data, integer = bert_qdq
    assert layernorm_explains(data, tmp_path, integer, _first_input("bert_tiny"))


def test_a_tighter_bound_does_not_explain_it(bert_qdq, tmp_path: Path,  # type: ignore[no-untyped-def]
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnxruntime_layernorm, "LAYERNORM_STEPS", 2)  # the replay needs 5
    data, integer = bert_qdq
    assert not layernorm_explains(data, tmp_path, integer, _first_input("bert_tiny"))


def test_a_model_without_layer_normalization_is_not_explained_so(tmp_path: Path) -> None:
    path = MODELS / "lenet_qdq.onnx"
    integer, _ = run_passes(load_model(path))
    with np.load(MODELS / "lenet_inputs.npz") as data:
        x = data["input_0"]
    assert not layernorm_explains(path.read_bytes(), tmp_path, integer, {"input": x})
