"""Per-layer cycles: the model backend's fast path against `run_program(backend="model")`."""

from pathlib import Path

import numpy as np
import pytest

from systolic.compare.layer_cycles import accelerator_runs, check_backend
from systolic.compare.sweep import PreparedModel, prepare_model, run_config
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError
from systolic.examples import example_path
from systolic.mapper.lowering import AcceleratorStep, compile_model
from systolic.sim.run.backends import run_program
from systolic.simulation.layer_rows import layer_rows
from systolic.simulation.run import simulate_model


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
    rows = layer_rows(compiled, accelerator_runs(compiled, "model", {}))
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


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_compare_rows_equal_simulate_rows(lenet: PreparedModel, dataflow: Dataflow) -> None:
    """`compare`'s JSON promises `simulate`'s rows: the same rows, notes and energies included."""
    from systolic.sim.energy.table import EnergyTable
    from systolic.simulation.energy import with_energy

    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow)
    simulated = simulate_model(example_path(), config, backend="model", compare_onnxruntime=False)
    assert simulated.compiled is not None
    report = with_energy(simulated.report, simulated.compiled, EnergyTable.default())
    compared = run_config(lenet.integer, config, label="x")
    assert list(compared.layers) == list(report.layers)
    assert compared.energy_pj == pytest.approx(report.energy.total_pj if report.energy else 0)
    notes = [layer.note for layer in compared.layers]
    assert any(note.startswith("layout: ") for note in notes)
    assert "quantizes a float value (a graph input) for the integer ops" in notes
    assert compared.total_cycles == simulated.report.total_cycles


def test_unknown_backend() -> None:
    with pytest.raises(ConfigError, match="unknown simulation backend 'spice'"):
        check_backend("spice")


MODELS = Path(__file__).resolve().parents[2] / "models"
MODEL_FILES = sorted(p for p in MODELS.glob("*.onnx") if not p.name.startswith("attn_"))


def test_the_twelve_test_models_are_found() -> None:
    assert len(MODEL_FILES) == 12


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_utilization_never_exceeds_one(path: Path) -> None:
    """Every layer of every test model, 4x4 and 8x8, both dataflows: the attributed cycles
    still add up to the run, and utilization is measured over max(cycles, active) <= 1."""
    prepared = prepare_model(path)
    for size in (4, 8):
        for dataflow in (Dataflow.WS, Dataflow.OS):
            config = ArrayConfig(rows=size, cols=size, dataflow=dataflow)
            result = run_config(prepared.integer, config, label="x")
            assert sum(layer.cycles for layer in result.layers) == result.total_cycles
            for layer in result.layers:
                utilization = layer.utilization(config.pes)
                assert 0 <= utilization <= 1, (config.shape_text, dataflow, layer)
                if layer.unit == "array":
                    window = max(layer.cycles, layer.active_cycles)
                    assert utilization == layer.macs / (config.pes * window)
                    assert layer.active_cycles >= layer.cycles - layer.stall_cycles
            assert 0 < result.utilization <= 1


def test_a_layer_overlapping_its_predecessor_is_measured_over_its_active_time() -> None:
    """resnet_tiny's block2 shortcut conv on a 4x4 WS array with a 4 KiB accumulator starts
    its EXECUTE work before block2_conv1 ends: it adds fewer cycles than it computes for, so
    MACs / (cycles · PEs) alone would claim the array fully busy (more than busy before the
    interleaved residual adds of session 9 shortened the layers around it)."""
    prepared = prepare_model(MODELS / "resnet_tiny_qdq.onnx")
    config = ArrayConfig(rows=4, cols=4, dataflow=Dataflow.WS, spad_kib=16, acc_kib=4)
    result = run_config(prepared.integer, config, label="x")
    (layer,) = [layer for layer in result.layers if layer.name == "block2_shortcut_shortcut_0_Conv"]
    assert layer.active_cycles > layer.cycles
    assert layer.macs / (config.pes * layer.cycles) >= 1
    assert layer.utilization(config.pes) == layer.macs / (config.pes * layer.active_cycles) < 1
    assert layer.to_json(config.pes)["active_cycles"] == layer.active_cycles
