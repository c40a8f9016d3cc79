"""Array time of lowered code: how long the instructions keep the systolic array busy.

`array_cycles` sums, over the EXECUTE instructions, the cycles the array takes operands:
`m` per COMPUTE and `k` per COMPUTE.OS (`busy`). `occupied` adds the minimum tile period of
docs/hardware.md: a weight-stationary tile (the COMPUTEs between two PRELOADs) occupies the
array for at least `rows` cycles, an output-stationary COMPUTE.OS for at least `rows` cycles.
Compared with `ideal_cycles = macs / (rows · cols)` this gives the mapping's efficiency
independent of the memory system (which issue 5's cycle model adds).
"""

import dataclasses
from collections.abc import Iterable

from systolic.config import ArrayConfig
from systolic.isa.instructions import Compute, ComputeOS, Instruction, Preload

__all__ = ["ArrayCycles", "array_cycles", "ideal_cycles"]


@dataclasses.dataclass(frozen=True)
class ArrayCycles:
    """`busy`: cycles operands enter the array; `occupied`: with the minimum tile periods."""

    busy: int
    occupied: int


def array_cycles(instructions: Iterable[Instruction], config: ArrayConfig) -> ArrayCycles:
    """Return the array time of `instructions` (module docstring)."""
    busy = occupied = 0
    tile = 0  # rows streamed since the last PRELOAD (weight-stationary)
    for instr in instructions:  # (exact classes, not isinstance: 100,000s of instructions)
        if type(instr) is Compute:
            busy += instr.m
            tile += instr.m
        elif type(instr) is Preload:
            if tile:
                occupied += max(tile, config.rows)
            tile = 0
        elif type(instr) is ComputeOS:
            busy += instr.k
            occupied += max(instr.k, config.rows)
    if tile:
        occupied += max(tile, config.rows)
    return ArrayCycles(busy, occupied)


def ideal_cycles(macs: int, config: ArrayConfig) -> float:
    """Return `macs / (rows · cols)`: the array time if every PE worked every cycle."""
    return macs / config.pes
