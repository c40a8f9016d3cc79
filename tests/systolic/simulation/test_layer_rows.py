"""The per-layer rows: unit names and notes for every kind of layer, cycles from the runs."""

from systolic.config import ArrayConfig
from systolic.examples import example_path
from systolic.isa.program import LayerUnit, ProgramLayer
from systolic.mapper.lowering import compile_model
from systolic.simulation.layer_rows import layer_note, layer_rows, unit_name
from systolic.simulation.prepare import prepare_model
from systolic.simulation.runner import run_compiled, segment_runner


def _layer(unit: LayerUnit, reason: str = "") -> ProgramLayer:
    return ProgramLayer("n", "Op", unit, 0, 1, reason=reason)


def test_unit_names_and_notes() -> None:
    units = (LayerUnit.ARRAY, LayerUnit.VECTOR, LayerUnit.LAYOUT, LayerUnit.HOST)
    assert [unit_name(_layer(unit)) for unit in units] == ["array", "vector", "vector", "host"]
    assert layer_note(_layer(LayerUnit.HOST, "not an accelerator operator")) == (
        "not an accelerator operator"
    )
    assert layer_note(_layer(LayerUnit.LAYOUT, "reads x in memory order")) == (
        "layout: reads x in memory order"
    )
    assert layer_note(_layer(LayerUnit.LAYOUT)) == "layout"
    assert layer_note(_layer(LayerUnit.ARRAY, "ignored")) == ""


def test_rows_add_up_to_the_runs() -> None:
    config = ArrayConfig(rows=4, cols=4)
    prepared = prepare_model(example_path())
    compiled = compile_model(prepared.integer, config)
    run = run_compiled(compiled, prepared.inputs, segment_runner("model"))
    rows = layer_rows(compiled, run.run_times())
    assert [row.name for row in rows] == [layer.name for layer in compiled.layers]
    assert sum(row.cycles for row in rows) == sum(r.total_cycles for r in run.runs)
    for row, layer in zip(rows, compiled.layers, strict=True):
        assert row.ideal_cycles == (-(-layer.macs // 16) if layer.unit is LayerUnit.ARRAY else 0)
        assert row.note == layer_note(layer)
