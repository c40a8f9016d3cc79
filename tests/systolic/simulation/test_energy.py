"""Energy per layer of whole compiled models: the array's MACs equal the mapper's MAC count
of every array layer (at least that count for depthwise convolutions, whose weight tiles are
block-diagonal), the layers' external bytes are the program's segments, and the summary's
figures follow from the totals."""

from pathlib import Path

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Load
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.sim.energy.table import EnergyTable
from systolic.simulation.energy import layer_energies, summarize
from systolic.simulation.prepare import prepare_model

MODELS = Path(__file__).resolve().parents[2] / "models"
CONFIGS = [ArrayConfig(rows=4, cols=4), ArrayConfig(rows=8, cols=4, dataflow=Dataflow.OS)]


def _compiled(name: str, config: ArrayConfig) -> CompiledModel:
    return compile_model(prepare_model(MODELS / name).integer, config)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.shape_text}-{c.dataflow.value}")
@pytest.mark.parametrize("name", ["lenet_qdq.onnx", "resnet_tiny_qdq.onnx", "dwsep_qdq.onnx",
                                  "mlp_qop.onnx"])  # fmt: skip
def test_useful_macs_are_the_mappers_and_bytes_the_segments(name: str, config: ArrayConfig) -> None:
    compiled = _compiled(name, config)
    energies = layer_energies(compiled, EnergyTable.default())
    assert len(energies) == len(compiled.layers)
    instructions = compiled.program.instructions
    for layer, energy in zip(compiled.layers, energies, strict=True):
        expected = layer.macs if layer.unit is LayerUnit.ARRAY else 0
        if layer.name.startswith("dw"):  # dwsep's depthwise convolutions
            assert energy.events["macs"] > expected > 0, layer.name
        else:
            assert energy.events["macs"] == expected, layer.name
        assert energy.events["mac_slots"] >= energy.events["macs"]
        body = instructions[layer.first : layer.end]
        reads = sum(s.length for i in body if isinstance(i, Load) for s in i.segments(config))
        writes = sum(s.length for i in body if not isinstance(i, Load)
                     for s in i.segments(config))  # fmt: skip
        assert (energy.events["ext_read_bytes"], energy.events["ext_write_bytes"]) == (
            reads, writes)
        if layer.unit is LayerUnit.HOST:
            assert energy.total_pj == 0


def test_the_summary_adds_the_layers_and_derives_the_clocked_figures() -> None:
    config = CONFIGS[0]
    table = EnergyTable.default()
    compiled = _compiled("lenet_qdq.onnx", config)
    energies = layer_energies(compiled, table)
    macs = sum(layer.macs for layer in compiled.layers if layer.unit is LayerUnit.ARRAY)
    summary = summarize(energies, table, table.actions(config), total_cycles=20_000, macs=macs,
                        clock_mhz=200)  # fmt: skip
    assert summary.total_pj == pytest.approx(sum(e.total_pj for e in energies))
    assert summary.macs == sum(e.events["macs"] for e in energies) > 0  # (no depthwise layer)
    clocked = summary.clocked()
    assert clocked is not None
    assert clocked["latency_ms"] == pytest.approx(0.1)
    assert clocked["inferences_per_second"] == pytest.approx(10_000)
    assert clocked["tops_per_watt"] == pytest.approx(2 * summary.macs / summary.total_pj)
    assert clocked["average_power_w"] == pytest.approx(summary.total_pj * 1e-12 / 1e-4)
    document = summary.to_json()
    assert document["total_pj"] == pytest.approx(summary.total_pj, abs=1e-3)
    assert set(document["components"]) == {"pe_array", "spad_in", "spad_wt", "params",
                                           "accumulator", "output_vector", "external"}
    assert summarize(energies, table, table.actions(config), 20_000, macs).clocked() is None


@pytest.mark.slow
def test_light_resnet50_macs_are_the_mappers() -> None:
    """The onnx wheel's light ResNet-50 at 16x16 (about a minute): every array layer's MACs."""
    import onnx

    model = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
    config = ArrayConfig(rows=16, cols=16)
    compiled = compile_model(prepare_model(model).integer, config)
    energies = layer_energies(compiled, EnergyTable.default())
    for layer, energy in zip(compiled.layers, energies, strict=True):
        expected = layer.macs if layer.unit is LayerUnit.ARRAY else 0
        assert energy.events["macs"] == expected, layer.name
    assert sum(e.events["macs"] for e in energies) == 4_089_184_256
