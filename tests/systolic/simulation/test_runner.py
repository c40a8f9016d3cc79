"""The model runner: accelerator runs on any backend, host steps on the reference, in order."""

from pathlib import Path

import numpy as np
import onnx
import pytest

from systolic.config import ArrayConfig
from systolic.errors import ConfigError, SimulationError
from systolic.mapper.lowering import AcceleratorStep, CompiledModel, compile_model
from systolic.reference.executor import run_graph
from systolic.sim.run import backends
from systolic.sim.run.model_backend import run_model
from systolic.simulation.prepare import PreparedModel, prepare_model
from systolic.simulation.runner import (
    GOLDEN,
    check_backend,
    run_compiled,
    segment_runner,
    simulate,
)

from .test_host_operators import conv_host_conv

MODELS = Path(__file__).parents[2] / "models"


@pytest.fixture(scope="module")
def attention(tmp_path_factory: pytest.TempPathFactory) -> tuple[PreparedModel, CompiledModel]:
    """A model whose host step splits it into two accelerator runs (Conv, a host
    ConvTranspose-1, Conv: the realistic models now run whole on the accelerator)."""
    path = tmp_path_factory.mktemp("two_runs") / "conv_host_conv.onnx"
    onnx.save(conv_host_conv(np.random.default_rng(3)), path)
    prepared = prepare_model(path)
    return prepared, compile_model(prepared.integer, ArrayConfig(rows=4, cols=4))


def test_runs_every_step_in_order_on_the_model_backend(
    attention: tuple[PreparedModel, CompiledModel],
) -> None:
    prepared, compiled = attention
    steps = [s for s in compiled.steps() if isinstance(s, AcceleratorStep)]
    assert len(steps) == compiled.accelerator_run_count == 2
    seen: list[int] = []
    run = run_compiled(compiled, prepared.inputs, segment_runner("model"),
                       after_run=lambda r, memory: seen.append(r.step.first))  # fmt: skip
    assert seen == [s.first for s in steps] == [r.step.first for r in run.runs]
    for accelerator_run, step in zip(run.runs, steps, strict=True):
        assert accelerator_run.end == step.first + len(step.program.instructions) - 1
        assert len(accelerator_run.times) == len(step.program.instructions)
        assert accelerator_run.run_times().total_cycles == accelerator_run.total_cycles > 0
        assert accelerator_run.to_json()["counters"] == dict(accelerator_run.counters)
    expected = run_graph(compiled.graph, prepared.inputs, opsets=compiled.opsets)
    for name, value in run.outputs(compiled).items():
        np.testing.assert_array_equal(value, expected[name])


def test_golden_runs_give_the_values_without_times(
    attention: tuple[PreparedModel, CompiledModel],
) -> None:
    prepared, compiled = attention
    golden = run_compiled(compiled, prepared.inputs, segment_runner(GOLDEN))
    model = run_compiled(compiled, prepared.inputs, segment_runner("model"))
    np.testing.assert_array_equal(golden.memory, model.memory)
    assert [(r.total_cycles, len(r.times)) for r in golden.runs] == [(0, 0)] * 2


def test_each_run_gets_its_own_waveform_and_the_watchdog(
    attention: tuple[PreparedModel, CompiledModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared, compiled = attention
    calls = []

    def recording(program, memory, *, watchdog, vcd):  # type: ignore[no-untyped-def]
        calls.append((watchdog, vcd))
        return run_model(program, memory)

    monkeypatch.setitem(backends.BACKENDS, "recording", recording)
    waves = [Path("a.vcd"), Path("b.vcd")]
    run_compiled(compiled, prepared.inputs,
                 segment_runner("recording", watchdog=99, vcd_files=waves))  # fmt: skip
    assert calls == [(99, wave) for wave in waves]


def test_simulate_takes_exactly_the_model_inputs(
    attention: tuple[PreparedModel, CompiledModel],
) -> None:
    prepared, compiled = attention
    (name,) = prepared.inputs
    with pytest.raises(SimulationError, match=rf"^the model takes inputs \['{name}'\], not \[\]$"):
        simulate(compiled, {})
    with pytest.raises(SimulationError, match=rf"^no value for the model input '{name}'$"):
        run_compiled(compiled, {}, segment_runner(GOLDEN))


def test_unknown_backend() -> None:
    with pytest.raises(ConfigError, match=r"^unknown simulation backend 'spice': use one of "):
        check_backend("spice")
