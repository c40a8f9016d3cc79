"""`Dataflow.BOTH`: each array layer in the faster of its two dataflows, by the cycle model:
in the whole program, no layer takes more cycles than in the faster single-dataflow program."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from systolic.commands.compile import integer_model
from systolic.compare.layer_cycles import accelerator_runs
from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError
from systolic.isa.instructions import ComputeOS, Preload
from systolic.isa.program import LayerUnit
from systolic.mapper.importer import load_model
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.compile_model import plan_layers
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.sim.timing.layer_cycles import layer_cycles
from systolic.simulation.layer_rows import layer_rows
from systolic.simulation.runner import simulate

MODELS = Path(__file__).resolve().parents[2] / "models"


def _layers(compiled: CompiledModel) -> list:
    """The array layers' rows (cycles in the whole program, cycle model)."""
    rows = layer_rows(compiled, accelerator_runs(compiled, "model", {}))
    return [row for row, layer in zip(rows, compiled.layers, strict=True)
            if layer.unit is LayerUnit.ARRAY]


def _family(compiled: CompiledModel, layer_name: str) -> type:
    """Preload or ComputeOS: the dataflow layer `layer_name` runs in."""
    layer = next(layer for layer in compiled.layers if layer.name == layer_name)
    kinds = {type(i) for i in compiled.program.instructions[layer.first:layer.end]}
    return ComputeOS if ComputeOS in kinds else Preload


@pytest.mark.parametrize("name", ["lenet_qdq", "mlp_qop"])
def test_every_layer_takes_at_most_the_faster_dataflows_cycles(name: str) -> None:
    # (lenet_qdq's pools are interleaved into the convolutions before them: the chooser
    # times each candidate with its blocks.) A layer right after a change of dataflow
    # starts once the array has drained (docs/cycle-model.md, "Both dataflows"): it takes
    # at most what it takes in the single-dataflow program of the layer before it (the
    # change paid for itself), the others at most min(WS, OS); the whole program is
    # faster than either.
    model = integer_model(load_model(MODELS / f"{name}.onnx"))
    both = ArrayConfig(rows=4, cols=4, dataflow=Dataflow.BOTH)
    compiled = {flow: compile_model(model, dataclasses.replace(both, dataflow=flow),
                                    layer_cycles=layer_cycles)
                for flow in Dataflow}  # fmt: skip
    rows = {flow: _layers(compiled[flow]) for flow in Dataflow}
    single = {Preload: rows[Dataflow.WS], ComputeOS: rows[Dataflow.OS]}
    before = Preload  # (weight-stationary after reset)
    for index, (ws, os, both_) in enumerate(zip(*(rows[flow] for flow in Dataflow),
                                                strict=True)):
        family = _family(compiled[Dataflow.BOTH], both_.name)
        bound = (min(ws.cycles, os.cycles) if family is before
                 else single[before][index].cycles)  # fmt: skip
        assert both_.cycles <= bound, both_.name
        before = family
    totals = {flow: sum(row.cycles for row in rows[flow]) for flow in Dataflow}
    assert totals[Dataflow.BOTH] <= min(totals[Dataflow.WS], totals[Dataflow.OS])
    kinds = {type(i) for i in compiled[Dataflow.BOTH].program.instructions}
    if name == "lenet_qdq":  # (its first convolution is faster WS, the second OS)
        assert {Preload, ComputeOS} <= kinds
    x = np.load(MODELS / f"{name.split('_')[0]}_inputs.npz")["input_0"]
    inputs = {compiled[Dataflow.WS].graph.inputs[0].name: x}
    outputs = [simulate(compiled[flow], inputs) for flow in (Dataflow.WS, Dataflow.BOTH)]
    for output in outputs[0]:  # (the golden machine runs the BOTH program: same values)
        np.testing.assert_array_equal(outputs[0][output], outputs[1][output])


def test_a_tie_keeps_weight_stationary_and_the_cycle_model_is_required() -> None:
    model = integer_model(load_model(MODELS / "mlp_qdq.onnx"))
    both = ArrayConfig(rows=4, cols=4, dataflow=Dataflow.BOTH)
    ties = compile_model(model, both, layer_cycles=lambda instructions, config: 7)  # (all tie)
    ws = compile_model(model, dataclasses.replace(both, dataflow=Dataflow.WS))
    # (the same code but for the constants' addresses: each layer's OS constants are placed
    # too, over the WS ones, and the next layer's start past the larger)
    assert [type(i) for i in ties.program.instructions] == [
        type(i) for i in ws.program.instructions]
    assert sum(len(s.data) for s in ties.program.segments) == sum(
        len(s.data) for s in ws.program.segments)
    with pytest.raises(ConfigError, match=r"^dataflow both chooses each layer's dataflow "
                                          r"with the cycle model"):
        compile_model(model, both)
    assert [layer.unit for layer in plan_layers(model, both)] == [
        layer.unit for layer in plan_layers(model, dataclasses.replace(both, dataflow=Dataflow.WS))]
