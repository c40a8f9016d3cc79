"""Per-layer cycles of a simulated run, from the per-instruction times a backend reports.

Rules (README, "simulate"; every backend reports the same times, so they agree too):

- A compiled model runs as accelerator runs (the instructions between two host layers, each
  ending in its own HALT) and host steps. Host layers take no accelerator cycles.
- Within one run, layer L *ends* at the `complete` cycle of its last instruction, and at the
  run's `total_cycles` (the cycle HALT is accepted) when it is the run's last layer; ends are
  made non-decreasing (a running maximum: a layer whose last instruction completes before
  the previous layer's end ends there too). A layer's `cycles` = its end − the previous
  layer's end in the same run (0 for the run's first layer: cycle 0 is the start). So the
  layers of a run add up to exactly the run's `total_cycles`, and a layer's cycles are the
  time it added to the run (units overlap: the next layer's loads start during this one).
- `busy` is the time the layer's own unit worked on it: the size of the union of
  [issue, complete) of its instructions on the EXECUTE unit (array layers: PRELOAD, COMPUTE)
  or on the STORE unit (vector and layout layers: POOL, ADD, COPY), clipped to the layer's
  window [start, end). `stall_cycles` = `cycles` − `busy`: the cycles the layer's unit waited
  (for operands to load, results to drain, or a hazard).
- `active` is the same union *unclipped*: the time the layer's own unit worked on it wherever
  that fell (EXECUTE for array layers: their PRELOAD and COMPUTE instructions). A short layer
  that overlapped the previous one can be active longer than its attributed `cycles`, so the
  honest array utilization of a layer is MACs / (rows · cols · max(cycles, active)) (never
  above 1), while the `cycles` still add up to the run's total.
- `ideal_cycles` = ceil(MACs / (rows · cols)) for array layers, else 0.
"""

import bisect
import dataclasses
from collections.abc import Sequence

import numpy as np

from systolic.config import ArrayConfig
from systolic.isa.encode_batch import UNIT_CODES, unit_codes
from systolic.isa.instruction_base import Unit
from systolic.isa.program import LayerUnit, Program, ProgramLayer
from systolic.sim.result import InstructionTimes, times_columns

__all__ = ["LayerTiming", "RunTimes", "ideal_array_cycles", "layer_timings", "program_units"]


@dataclasses.dataclass(frozen=True)
class RunTimes:
    """One accelerator run: instructions `first ..` of the whole program, their times (HALT
    last) and the run's total cycles."""

    first: int
    times: Sequence[InstructionTimes]
    total_cycles: int


@dataclasses.dataclass(frozen=True)
class LayerTiming:
    """A layer's cycles, busy cycles (clipped to its window), active cycles (unclipped) and
    stall cycles (module docstring)."""

    cycles: int
    busy: int
    active: int = 0

    @property
    def stall_cycles(self) -> int:
        return self.cycles - self.busy


def ideal_array_cycles(macs: int, config: ArrayConfig) -> int:
    """Return ceil(MACs / (rows · cols))."""
    return -(-macs // config.pes)


def _union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Return the size of the union of the intervals [starts[i], ends[i]) (empty ones count
    nothing): sorted by start, each adds what reaches beyond every earlier one's end."""
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if not starts.size:
        return 0
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.empty_like(ends)
    reach[0] = starts[0]
    np.maximum.accumulate(ends[:-1], out=reach[1:])
    return int(np.maximum(0, ends - np.maximum(starts, reach)).sum())


def program_units(program: Program) -> np.ndarray:
    """Return the unit of every instruction of `program` as codes (`layer_timings`' form)."""
    return unit_codes(program.words)


def _work_unit(layer: ProgramLayer) -> Unit:
    return Unit.EX if layer.unit is LayerUnit.ARRAY else Unit.ST


def layer_timings(
    layers: Sequence[ProgramLayer], units: Sequence[Unit] | np.ndarray, runs: Sequence[RunTimes]
) -> list[LayerTiming]:
    """Return the timing of every layer (in layer order) from the `runs` of the program;
    `units[i]` is the unit of the program's instruction i (`Instruction.UNIT`, or its code
    from `program_units`)."""
    if not isinstance(units, np.ndarray):
        units = np.array([UNIT_CODES[unit] for unit in units], dtype=np.int8)
    ordered = sorted(runs, key=lambda run: run.first)
    firsts = [run.first for run in ordered]
    # the layers of each run, in order
    by_run: dict[int, list[int]] = {}
    for index, layer in enumerate(layers):
        if layer.unit is LayerUnit.HOST or layer.count == 0:
            continue
        position = bisect.bisect_right(firsts, layer.first) - 1
        run = ordered[position] if position >= 0 else None
        if run is None or layer.first >= run.first + len(run.times) - 1:
            raise ValueError(f"layer {layer.name!r} (instruction {layer.first}) is in no run")
        by_run.setdefault(run.first, []).append(index)
    result = [LayerTiming(0, 0) for _ in layers]
    for run in ordered:
        members = by_run.get(run.first, [])
        if not members:
            continue
        _, issues, completes = times_columns(run.times)
        run_units = units[run.first : run.first + len(run.times) - 1]
        start = 0
        for position, index in enumerate(members):
            layer = layers[index]
            low, high = layer.first - run.first, layer.end - run.first
            end = max(start, int(completes[high - 1]))
            if position == len(members) - 1:
                end = max(end, run.total_cycles)
            own = run_units[low:high] == UNIT_CODES[_work_unit(layer)]
            own_issues, own_completes = issues[low:high][own], completes[low:high][own]
            busy = _union_length(np.maximum(own_issues, start), np.minimum(own_completes, end))
            active = _union_length(own_issues, own_completes)
            result[index] = LayerTiming(end - start, busy, active)
            start = end
    return result
