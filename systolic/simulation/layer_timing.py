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

import dataclasses
from collections.abc import Sequence

from systolic.config import ArrayConfig
from systolic.sim.isa.instruction_base import Unit
from systolic.sim.isa.program import LayerUnit, ProgramLayer
from systolic.sim.run.result import InstructionTimes

__all__ = ["LayerTiming", "RunTimes", "ideal_array_cycles", "layer_timings"]


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


def _union_length(intervals: list[tuple[int, int]]) -> int:
    total = 0
    reach = None
    for start, end in sorted(intervals):
        if reach is None or start >= reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def _work_unit(layer: ProgramLayer) -> Unit:
    return Unit.EX if layer.unit is LayerUnit.ARRAY else Unit.ST


def layer_timings(
    layers: Sequence[ProgramLayer], units: Sequence[Unit], runs: Sequence[RunTimes]
) -> list[LayerTiming]:
    """Return the timing of every layer (in layer order) from the `runs` of the program;
    `units[i]` is the unit of the program's instruction i (`Instruction.UNIT`)."""
    run_of: dict[int, RunTimes] = {}
    for run in runs:
        for index in range(run.first, run.first + len(run.times) - 1):
            run_of[index] = run
    # the layers of each run, in order
    by_run: dict[int, list[int]] = {}
    for index, layer in enumerate(layers):
        if layer.unit is LayerUnit.HOST or layer.count == 0:
            continue
        by_run.setdefault(run_of[layer.first].first, []).append(index)
    result = [LayerTiming(0, 0) for _ in layers]
    for run in runs:
        members = by_run.get(run.first, [])
        start = 0
        for position, index in enumerate(members):
            layer = layers[index]
            local = range(layer.first - run.first, layer.end - run.first)
            end = max(start, run.times[local[-1]].complete)
            if position == len(members) - 1:
                end = max(end, run.total_cycles)
            unit = _work_unit(layer)
            own = [
                (run.times[i].issue, run.times[i].complete)
                for i in local
                if units[run.first + i] is unit
            ]
            clipped = [(max(a, start), min(b, end)) for a, b in own]
            busy = _union_length([(a, b) for a, b in clipped if b > a])
            active = _union_length([(a, b) for a, b in own if b > a])
            result[index] = LayerTiming(end - start, busy, active)
            start = end
    return result
