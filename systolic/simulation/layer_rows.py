"""The per-layer rows of `systolic simulate` and `systolic compare`: one function for both.

`layer_rows(compiled, runs)` returns one `LayerResult` per layer of a compiled model, in
execution order: its cycles, stall and active cycles from the accelerator runs' times
(`layer_timing.layer_timings`), its `unit` ("array"; "host"; "vector" for the vector
datapath and for layout ops, done by COPY or by addressing alone), `ideal_cycles` (array
layers only) and `note`: why a layer runs on the host, or "layout" / "layout: RULE" for a
layout op.
"""

from collections.abc import Sequence

from systolic.isa.program import LayerUnit, ProgramLayer
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.simulation.layer_timing import (
    RunTimes,
    ideal_array_cycles,
    layer_timings,
    program_units,
)
from systolic.simulation.report import LayerResult

__all__ = ["layer_note", "layer_rows", "unit_name"]


def unit_name(layer: ProgramLayer) -> str:
    """Return "array", "host" or "vector" (the vector datapath, and layout ops)."""
    if layer.unit is LayerUnit.ARRAY:
        return "array"
    if layer.unit is LayerUnit.HOST:
        return "host"
    return "vector"


def layer_note(layer: ProgramLayer) -> str:
    """Return the row's note: the host layer's reason, the layout rule, or nothing."""
    if layer.unit is LayerUnit.LAYOUT:
        return f"layout: {layer.reason}" if layer.reason else "layout"
    return layer.reason if layer.unit is LayerUnit.HOST else ""


def layer_rows(compiled: CompiledModel, runs: Sequence[RunTimes]) -> list[LayerResult]:
    """Return the row of every layer of `compiled` from the times of its accelerator runs."""
    config = compiled.config
    timings = layer_timings(compiled.layers, program_units(compiled.program), runs)
    rows = []
    for layer, timing in zip(compiled.layers, timings, strict=True):
        array = layer.unit is LayerUnit.ARRAY
        rows.append(LayerResult(
            name=layer.name, op=layer.op, unit=unit_name(layer), macs=layer.macs,
            cycles=timing.cycles,
            ideal_cycles=ideal_array_cycles(layer.macs, config) if array else 0,
            stall_cycles=timing.stall_cycles, note=layer_note(layer), active_cycles=timing.active,
        ))  # fmt: skip
    return rows
