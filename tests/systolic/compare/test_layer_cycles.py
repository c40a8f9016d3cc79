"""Per-layer cycles: the model backend's fast path against `run_program(backend="model")`."""

import numpy as np
import pytest
from systolic.mapper.lowering import AcceleratorStep, compile_model
from systolic.sim.run.backends import run_program

from systolic.compare.layer_cycles import accelerator_runs, check_backend, layer_results
from systolic.compare.sweep import PreparedModel
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_timing_path_equals_the_model_backend(lenet: PreparedModel, dataflow: Dataflow) -> None:
    """The fast path skips the values; the times must be those `run_program` reports."""
    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow)
    compiled = compile_model(lenet.integer, config)
    runs = accelerator_runs(compiled, "model", {})
    steps = [s for s in compiled.steps() if isinstance(s, AcceleratorStep)]
    assert [run.first for run in runs] == [step.first for step in steps]
    image = compiled.memory_image()
    image.extend(bytes(-len(image) % config.bus_bytes))
    for run, step in zip(runs, steps, strict=True):
        result = run_program(step.program, image, backend="model")
        assert tuple(run.times) == result.times
        assert run.total_cycles == result.total_cycles


def test_layer_rows(lenet: PreparedModel) -> None:
    config = ArrayConfig(rows=4, cols=4)
    compiled = compile_model(lenet.integer, config)
    rows = layer_results(compiled, accelerator_runs(compiled, "model", {}))
    assert [r.name for r in rows] == [layer.name for layer in compiled.layers]
    for row, layer in zip(rows, compiled.layers, strict=True):
        assert row.macs == layer.macs
        assert 0 <= row.stall_cycles <= row.cycles
        if row.unit == "array":
            assert row.ideal_cycles == -(-layer.macs // 16) > 0
        else:
            assert row.ideal_cycles == 0
        if row.unit == "host":
            assert row.cycles == 0
    assert np.sum([r.cycles for r in rows]) > 0


def test_unknown_backend() -> None:
    with pytest.raises(ConfigError, match="unknown simulation backend 'spice'"):
        check_backend("spice")
