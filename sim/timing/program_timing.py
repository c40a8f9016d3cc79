"""The cycle model's result (`ProgramModel.run`, Python or native pass) and its counters."""

import dataclasses
from collections.abc import Sequence

import numpy as np

__all__ = ["COUNTER_NAMES", "UNIT_NAMES", "ProgramTiming", "busy_cycles"]

UNIT_NAMES = ("ld", "ex", "st")
"""The units in the dispatcher's order (LD 0, EX 1, ST 2), as the counters name them."""
COUNTER_NAMES: tuple[str, ...] = (
    "cycles", "instructions", "dispatch_stall",
    *(f"unit_busy_{u}" for u in UNIT_NAMES), *(f"hazard_stall_{u}" for u in UNIT_NAMES),
)
"""Names of the counters `ProgramTiming.counters` holds (unit_busy[u] as unit_busy_ld ...)."""


@dataclasses.dataclass(frozen=True)
class ProgramTiming:
    """Per instruction (program order, HALT included) the accept, issue and complete cycles."""

    accept: tuple[int, ...]
    issue: tuple[int, ...]
    complete: tuple[int, ...]
    total_cycles: int
    counters: dict[str, int]
    rollbacks: int = 0
    """Returns to a checkpoint the EXECUTE completion merge needed (model cost only)."""


def busy_cycles(units: Sequence[int], issues: Sequence[int], completes: Sequence[int]
                ) -> list[int]:
    """Return, per unit (`UNIT_NAMES` order), the cycles covered by the [issue, complete)
    intervals of its instructions (`units[i]`, `issues[i]`, `completes[i]` per instruction).

    A unit's issues increase in program order and complete >= issue, so the running maximum
    of the completions is the end of the current run of overlapping intervals.
    """
    unit = np.array(units, dtype=np.int8)
    starts_all = np.array(issues, dtype=np.int64)
    ends_all = np.array(completes, dtype=np.int64)
    lengths = []
    for u in range(len(UNIT_NAMES)):
        mine = unit == u
        starts, ends = starts_all[mine], ends_all[mine]
        if not starts.size:
            lengths.append(0)
            continue
        high = np.maximum.accumulate(ends)
        new = np.ones(starts.size, dtype=bool)
        new[1:] = starts[1:] > high[:-1]
        last = np.ones(starts.size, dtype=bool)
        last[:-1] = new[1:]
        lengths.append(int(high[last].sum() - starts[new].sum()))
    return lengths
