"""`systolic inspect`'s units agree with the compiler: on every model of tests/models and
tests/models/realistic at 8x8 WS, 4x4 OS and 16x16 WS, `node_units(..., calibrated=False)`
(planned, no calibration, no instruction) gives every node the unit and reason the compiled
program of the calibrated model gives it (a Concat's count of inputs written in place aside), and the same MACs per unit (array MACs equal to the
program's array layers', recurrent models aside); `plan_layers` gives the
compiled program's layers (name, op, unit, MACs, reason)."""

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import Model
from systolic.mapper.importer import load_model
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compile_model import plan_layers
from systolic.mapper.lowering.coverage import (
    follow_units,
    needs_calibration,
    node_units,
    symbols_as_one,
)
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.report import model_report

MODELS = Path(__file__).parents[2] / "models"
FILES = sorted([*MODELS.glob("*.onnx"), *(MODELS / "realistic").glob("*.onnx")])
CASES = [
    pytest.param(f, id=f"{f.parent.name}/{f.stem}",
                 marks=[pytest.mark.slow] if f.parent.name == "realistic" else [])
    for f in FILES
]  # fmt: skip
"""The realistic models (about a minute together) run with -m slow."""
CONFIGS = {
    "8x8-ws": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.WS),
    "4x4-os": ArrayConfig(rows=4, cols=4, dataflow=Dataflow.OS),
    "16x16-ws": ArrayConfig(rows=16, cols=16, dataflow=Dataflow.WS),
}

_RECURRENT = {"LSTM", "GRU", "RNN", "DynamicQuantizeLSTM"}
"""Their MACs column counts the ONNX node's own formula, not the unrolled products the array
runs, so only their units are compared with the program's."""


def _macs_per_unit(model: Model, units: list[tuple[str, str]]) -> Counter[str]:
    """Sum inspect's MACs column (`model_report`) per unit."""
    found: Counter[str] = Counter()
    for row in model_report(model, units)["nodes"]:
        found[row["unit"]] += row["macs"]
    return found


def _comparable(row: tuple[str, str]) -> tuple[str, str]:
    """A row as inspect and compile must agree on it: the unit, and the reason except how
    many of a Concat's inputs are written in place or a Split's outputs read in place
    (`ASSUMED_RANGES`: equal assumed scales need no requantization before the Concat, so an
    input read elsewhere too is copied), and the name of a table an activation is composed
    into (a requantization moved before an upsampling composes with it when scales differ)."""
    unit, reason = row
    if reason.startswith("layout: ") and reason.endswith(" copied"):
        return unit, "layout: a Concat or Split"
    if reason.startswith("fused into systolic.QTable ") and ", itself" in reason:
        return unit, "fused into a QTable" + reason[reason.index(", itself"):]
    return row


@pytest.fixture(scope="module", params=CASES)
def compiled_case(request: pytest.FixtureRequest) -> tuple[Model, Model, object]:
    """The model (symbolic dimensions bound to 1, as `node_units` does), its calibrated
    integer graph and the passes' report."""
    model = symbols_as_one(load_model(request.param, mark_unsupported=True))
    integer, report = run_passes(model)
    return model, integer, report


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_inspect_units_equal_the_compiled_ones(
    compiled_case: tuple[Model, Model, object], config: ArrayConfig
) -> None:
    model, integer, report = compiled_case
    names = [node.name for node in name_nodes(model).graph.nodes]
    program = compile_model(integer, config).program
    compiled = follow_units(names, report, {layer.name: layer for layer in program.layers})  # type: ignore[arg-type]
    planned = node_units(model, config, calibrated=False)
    assert [_comparable(row) for row in planned] == [_comparable(row) for row in compiled]
    assert _macs_per_unit(model, planned) == _macs_per_unit(model, compiled)
    if not any(node.op_type in _RECURRENT for node in model.graph.nodes):
        array_macs = sum(layer.macs for layer in program.layers if layer.unit.value == "array")
        assert _macs_per_unit(model, planned)["array"] == array_macs


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_plan_layers_are_the_compiled_layers(
    compiled_case: tuple[Model, Model, object], config: ArrayConfig
) -> None:
    _, integer, _ = compiled_case
    program = compile_model(integer, config).program
    expected = tuple(dataclasses.replace(layer, first=0, count=0) for layer in program.layers)
    assert plan_layers(integer, config) == expected


def test_only_float_models_need_calibration() -> None:
    needing = {f.name for f in FILES if needs_calibration(load_model(f, mark_unsupported=True))}
    assert needing == {f.name for f in FILES if f.stem.endswith("_float")}
