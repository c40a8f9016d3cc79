"""The explanation of a difference from onnxruntime, on the test models and this CPU: the
reference outputs (what a bit-exact simulation gives) against onnxruntime's."""

from pathlib import Path

import numpy as np
import pytest

from systolic.mapper.importer import load_model
from systolic.mapper.passes import pipeline
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model
from systolic.simulation.onnxruntime_check import onnxruntime_available, run_onnxruntime
from systolic.simulation.onnxruntime_explain import explain_difference, onnxruntime_checks
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates
from systolic.simulation.saturating_layers import saturating_layers

pytestmark = pytest.mark.skipif(not onnxruntime_available(), reason="needs onnxruntime")

MODELS = Path(__file__).parents[2] / "models"


def _case(name: str, index: int = 0):
    path = MODELS / f"{name}.onnx"
    model = load_model(path)
    inputs = {"input": np.load(MODELS / f"{name.rsplit('_', 1)[0]}_inputs.npz")[f"input_{index}"]}
    return path, model, inputs, run_model(model, inputs)


def _checks(name: str, index: int = 0):
    path, model, inputs, ours = _case(name, index)
    integer, _ = run_passes(model)
    theirs = run_onnxruntime(path, inputs)
    return onnxruntime_checks(path, model, integer, inputs, ours, theirs, quantized=True)


@pytest.mark.parametrize("name", ["lenet_qop", "resnet_tiny_qop", "mlp_qdq"])
def test_qoperator_and_qdq_models_on_this_cpu(name: str):
    figures, explanation = _checks(name)
    assert explanation is not None
    if not onnxruntime_saturates():  # exact onnxruntime: nothing to explain
        assert explanation.kind == "none" and figures["equal_fraction"] == 1.0
        return
    assert figures["equal_fraction"] < 1.0  # these inputs do saturate here
    assert explanation.kind == "saturation"
    _, model, inputs, _ = _case(name)
    assert explanation.layers == tuple(layer.name for layer in saturating_layers(model, inputs))


def test_equal_outputs_need_no_explanation():
    # dwsep input 2 saturates, but not enough to change an output (see the model tests)
    figures, explanation = _checks("dwsep_qop", 2)
    assert explanation is not None and explanation.kind == "none"
    assert figures["equal_fraction"] == 1.0 and "unoptimized_equal_fraction" not in figures


def test_fused_rounding_is_told_apart():
    path, model, inputs, ours = _case("attn_qdq")
    plain = run_onnxruntime(path, inputs, optimized=False)
    assert np.array_equal(plain["output"], ours["output"])
    explanation = explain_difference(path, model, inputs, ours, plain_equal=True)
    assert explanation.kind == "fused_rounding"


@pytest.mark.parametrize("name", ["lenet_qop", "mlp_qdq"])
def test_a_real_difference_is_unexplained(name: str):
    path, model, inputs, ours = _case(name)
    wrong = {key: value + np.float32(0.5) for key, value in ours.items()}
    explanation = explain_difference(path, model, inputs, wrong, plain_equal=False)
    assert explanation.kind == "unexplained"


REALISTIC = MODELS / "realistic"


@pytest.mark.parametrize(("name", "feeds"), [
    ("bert_tiny_dynamic", {"input_ids": "input_ids_0", "attention_mask": "attention_mask_0"}),
    ("lstm2_dynamic", {"input": "input_0"}),
])  # fmt: skip
def test_dynamic_quantization_models_on_this_cpu(name: str, feeds: dict[str, str],
                                                monkeypatch: pytest.MonkeyPatch):
    # the model's float part as written (dynamic_island off): compared as quantized steps
    monkeypatch.setattr(pipeline, "quantize_dynamic_island", lambda model, *_, **__: model)
    # onnxruntime's quantize_dynamic models: float rounding before DynamicQuantizeLinear (and
    # inside DynamicQuantizeLSTM) takes whole steps; without VNNI its kernels saturate too
    path = REALISTIC / f"{name}.onnx"
    model = load_model(path)
    stored = np.load(REALISTIC / f"{name.rsplit('_', 1)[0]}_inputs.npz")
    inputs = {key: stored[value] for key, value in feeds.items()}
    integer, _ = run_passes(model)
    ours = run_model(integer, inputs)  # what a bit-exact simulation gives
    theirs = run_onnxruntime(path, inputs)
    figures, explanation = onnxruntime_checks(path, model, integer, inputs, ours, theirs,
                                              quantized=True)  # fmt: skip
    assert explanation is not None and figures["equal_fraction"] < 1.0
    if onnxruntime_saturates():
        assert explanation.kind == "saturation+float_rounding"
        assert explanation.layers == tuple(dict.fromkeys(
            layer.name for layer in saturating_layers(model, inputs)))  # fmt: skip
    else:
        assert explanation.kind == "float_rounding"
