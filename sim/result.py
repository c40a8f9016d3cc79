"""What a simulation backend returns: the memory image, cycle counts and per-instruction times.

Cycle numbering (every backend agrees, docs/hardware.md "Accelerator"): cycle 0 is the cycle
`start` is high; instruction i is offered from the cycle instruction i - 1 was accepted;
`accept`, `issue` and `complete` are the cycles of the dispatcher's acceptance, the unit
taking the instruction and its completion reaching the dispatcher. HALT's issue and
complete are its accept cycle, and `total_cycles` (the `cycles` counter when `done` rises)
equals it.
"""

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import overload

import numpy as np

__all__ = [
    "COUNTER_NAMES", "UNIT_NAMES", "InstructionTimes", "RunResult", "TimesTable",
    "counter_names", "times_columns",
]

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


class TimesTable(Sequence[InstructionTimes]):
    """Per-instruction times held as three int64 arrays (`accept`, `issue`, `complete`),
    read as a sequence of `InstructionTimes` (equal to a tuple of the same times): the form
    of a long run's times that costs no Python object per instruction until one is read."""

    def __init__(self, accept: "Sequence[int] | np.ndarray", issue: "Sequence[int] | np.ndarray",
                 complete: "Sequence[int] | np.ndarray") -> None:
        self.accept = np.asarray(accept, dtype=np.int64)
        self.issue = np.asarray(issue, dtype=np.int64)
        self.complete = np.asarray(complete, dtype=np.int64)
        if not self.accept.shape == self.issue.shape == self.complete.shape or (
                self.accept.ndim != 1):
            raise ValueError("accept, issue and complete must be equally long sequences")

    def __len__(self) -> int:
        return int(self.accept.shape[0])

    @overload
    def __getitem__(self, index: int) -> InstructionTimes: ...
    @overload
    def __getitem__(self, index: slice) -> "TimesTable": ...
    def __getitem__(self, index: int | slice) -> "InstructionTimes | TimesTable":
        if isinstance(index, slice):
            return TimesTable(self.accept[index], self.issue[index], self.complete[index])
        return InstructionTimes(int(self.accept[index]), int(self.issue[index]),
                                int(self.complete[index]))

    def __iter__(self) -> Iterator[InstructionTimes]:
        return map(InstructionTimes, self.accept.tolist(), self.issue.tolist(),
                   self.complete.tolist())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TimesTable({len(self)} instructions)"


def times_columns(times: Sequence[InstructionTimes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the accept, issue and complete cycles of `times` as int64 arrays."""
    if isinstance(times, TimesTable):
        return times.accept, times.issue, times.complete
    table = np.array([(t.accept, t.issue, t.complete) for t in times],
                     dtype=np.int64).reshape(-1, 3)
    return table[:, 0], table[:, 1], table[:, 2]


@dataclasses.dataclass(frozen=True)
class RunResult:
    """The outcome of running a program to HALT."""

    memory: bytearray
    """The whole external memory image after the run."""
    total_cycles: int
    times: Sequence[InstructionTimes]
    """One per instruction of the program, HALT included (a tuple, or a `TimesTable`)."""
    counters: Mapping[str, int]
    """The Accelerator's counters by name (`COUNTER_NAMES`)."""
    events: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """The energy event counts of the run by name (`systolic.hdl.event_counters.RTL_EVENTS`
    from the RTL's counters; the model backend's are the cycle model's, equal to them)."""
