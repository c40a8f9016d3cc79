"""The ordering the hardware keeps: which older instructions each instruction waits for.

docs/isa.md, "Hazards": an instruction waits for every older instruction whose footprint
conflicts with its own (overlapping ranges of one memory, at least one a write) and, because
each unit executes its queue in order, for the previous instruction of its own unit; HALT
waits for everything. Any execution order that respects these edges computes what program
order computes, which is why the golden model runs programs in program order.
"""

from collections.abc import Sequence

from systolic.config import ArrayConfig
from systolic.isa.instructions import Halt, Instruction

__all__ = ["dependencies"]


def dependencies(instructions: Sequence[Instruction], config: ArrayConfig) -> list[frozenset[int]]:
    """Return, for each instruction, the indices of the older ones it must wait for."""
    footprints = [instr.footprint(config) for instr in instructions]
    last_of_unit: dict[object, int] = {}
    result = []
    for index, instr in enumerate(instructions):
        if isinstance(instr, Halt):
            result.append(frozenset(range(index)))
            continue
        waits = {
            older
            for older in range(index)
            if any(a.conflicts(b) for a in footprints[index] for b in footprints[older])
        }
        if instr.UNIT in last_of_unit:
            waits.add(last_of_unit[instr.UNIT])
        last_of_unit[instr.UNIT] = index
        result.append(frozenset(waits))
    return result
