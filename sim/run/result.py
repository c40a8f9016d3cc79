"""What a simulation backend returns: the memory image, cycle counts and per-instruction times.

Cycle numbering (every backend agrees, docs/hardware.md "Accelerator"): cycle 0 is the cycle
`start` is high; instruction i is offered from the cycle instruction i - 1 was accepted;
`accept`, `issue` and `complete` are the cycles of the dispatcher's acceptance, the unit
taking the instruction and its completion reaching the dispatcher. HALT's issue and
complete are its accept cycle, and `total_cycles` (the `cycles` counter when `done` rises)
equals it.
"""

import dataclasses
from collections.abc import Mapping

__all__ = ["COUNTER_NAMES", "UNIT_NAMES", "InstructionTimes", "RunResult", "counter_names"]

UNIT_NAMES = ("ld", "ex", "st")
"""Unit suffixes of the per-unit counters, in unit index order (LD 0, EX 1, ST 2)."""


def counter_names() -> tuple[str, ...]:
    """Return the names of the Accelerator's counters as `RunResult.counters` keys."""
    names = ["cycles", "instructions", "dispatch_stall"]
    names += [f"unit_busy_{u}" for u in UNIT_NAMES]
    names += [f"hazard_stall_{u}" for u in UNIT_NAMES]
    return tuple(names)


COUNTER_NAMES = counter_names()
"""`cycles`, `instructions`, `dispatch_stall`, `unit_busy_{ld,ex,st}`, `hazard_stall_{ld,ex,st}`."""


@dataclasses.dataclass(frozen=True)
class InstructionTimes:
    """The cycles one instruction was accepted, issued (started) and completed (ended)."""

    accept: int
    issue: int
    complete: int


@dataclasses.dataclass(frozen=True)
class RunResult:
    """The outcome of running a program to HALT."""

    memory: bytearray
    """The whole external memory image after the run."""
    total_cycles: int
    times: tuple[InstructionTimes, ...]
    """One per instruction of the program, HALT included."""
    counters: Mapping[str, int]
    """The Accelerator's counters by name (`COUNTER_NAMES`)."""
