"""The per-layer rows of `systolic simulate` and `systolic compare`: one function for both.

`layer_rows(compiled, runs)` returns one `LayerResult` per layer of a compiled model, in
execution order: its cycles, stall and active cycles from the accelerator runs' times
(`layer_timing.layer_timings`), its `unit` ("array"; "host"; "vector" for the vector
datapath and for layout ops, done by COPY or by addressing alone), `ideal_cycles` (array
layers only) and `note`: why a layer runs on the host, or "layout" / "layout: RULE" for a
layout op. `elements`: the elements a layer produces when it is elementwise work (vector
or host, not a layout op); `host_bytes`: the bytes of the placed tensors a host layer reads
and writes (`systolic.simulation.coverage` sums both); `energy`: pJ per component when the
layer energies (`systolic.simulation.energy.layer_energies`) are given.
"""

import math
from collections.abc import Sequence

from systolic.isa.program import LayerUnit, ProgramLayer
from systolic.mapper.lowering.compiled import CompiledModel
from systolic.simulation.energy import LayerEnergy
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


def layer_rows(
    compiled: CompiledModel,
    runs: Sequence[RunTimes],
    energies: Sequence[LayerEnergy] | None = None,
) -> list[LayerResult]:
    """Return the row of every layer of `compiled` from the times of its accelerator runs, with
    its energy by component when `energies` (one per layer, `energy.layer_energies`) is given."""
    config = compiled.config
    timings = layer_timings(compiled.layers, program_units(compiled.program), runs)
    rows = []
    for index, (layer, timing) in enumerate(zip(compiled.layers, timings, strict=True)):
        array = layer.unit is LayerUnit.ARRAY
        rows.append(LayerResult(
            name=layer.name, op=layer.op, unit=unit_name(layer), macs=layer.macs,
            cycles=timing.cycles,
            ideal_cycles=ideal_array_cycles(layer.macs, config) if array else 0,
            stall_cycles=timing.stall_cycles, note=layer_note(layer), active_cycles=timing.active,
            elements=_elements(layer, compiled), host_bytes=_host_bytes(layer, compiled),
            energy=energies[index].components if energies is not None else (),
        ))  # fmt: skip
    return rows


def _elements(layer: ProgramLayer, compiled: CompiledModel) -> int:
    if layer.unit in (LayerUnit.ARRAY, LayerUnit.LAYOUT):
        return 0
    return sum(math.prod(shape) for shape, _ in _sizes(layer.outputs, compiled, placed=False))


def _host_bytes(layer: ProgramLayer, compiled: CompiledModel) -> int:
    if layer.unit is not LayerUnit.HOST:
        return 0
    names = (*layer.inputs, *layer.outputs)
    return sum(math.prod(shape) * size for shape, size in _sizes(names, compiled, placed=True))


def _sizes(
    names: Sequence[str], compiled: CompiledModel, *, placed: bool
) -> list[tuple[tuple[int, ...], int]]:
    """Return (shape, element bytes) of each tensor in `names`: its placement, or (unless
    `placed`) its type in the compiled graph; tensors known to neither are left out."""
    placements = compiled.program.tensors_by_name
    found = []
    for name in names:
        placement = placements.get(name)
        if placement is not None:
            found.append((placement.shape, placement.dtype.numpy.itemsize))
            continue
        tensor_type = None if placed or compiled.graph is None else compiled.graph.type_of(name)
        if tensor_type is not None and tensor_type.is_static and tensor_type.dtype.has_numpy:
            shape = tuple(int(d) for d in tensor_type.shape or () if isinstance(d, int))
            found.append((shape, tensor_type.dtype.numpy.itemsize))
    return found
