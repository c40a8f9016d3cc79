"""Cycle-exact model of the dispatcher (`systolic.hdl.dispatcher.Dispatcher`) and its units.

Given the program (per instruction: its unit, its footprint, how its unit times it, and the
cycle from which the host offers it), `DispatchModel.run` returns for every instruction the
cycle in which the dispatcher accepted it, issued it to its unit and received its completion,
and its table entry. The tests drive the RTL with the same programs and units and require
identical numbers. docs/hardware.md, "Dispatcher", states the rules this model computes in
closed form, instruction by instruction in program order (no cycle loop):

- accept(i) = the first cycle t >= max(arrival(i), accept(i-1) + 1) in which fewer than
  `table_entries` older instructions have completion >= t, and fewer than `queue_depth` older
  instructions of its unit have issue >= t;
- issue(i) = max(accept(i) + 1, issue of the unit's previous instruction + 1, the cycle its unit
  is free again, completion + 1 of every older conflicting instruction of another unit);
- complete(i) follows the unit's timing (`UnitModel`).
"""

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from systolic.isa.memories import Access, Memory

__all__ = [
    "MEMORY_ID",
    "UNITS",
    "DispatchModel",
    "Job",
    "JobTimes",
    "Timing",
    "UnitModel",
    "UnitTiming",
]

MEMORY_ID: dict[Memory, int] = {
    Memory.SPAD_IN: 0,
    Memory.SPAD_WT: 1,
    Memory.ACC: 2,
    Memory.PARAMS: 3,
    Memory.EXTERNAL: 4,
}
"""The dispatcher's 3-bit memory id of each memory (`systolic.hdl.range_overlap.MEMORY_IDS`)."""

UNITS = ("LD", "EX", "ST")
"""Unit index i executes the instructions whose `UNIT.value` is `UNITS[i]`."""


@dataclasses.dataclass(frozen=True)
class UnitTiming:
    """How a unit handles one instruction issued to it in cycle s.

    It can take its next instruction from cycle s + `busy` and reports this one's completion in
    cycle s + `latency`, or in the cycle after its previous completion if that is later
    (completions leave a unit in order, at most one per cycle). Both are at least 1.
    """

    busy: int
    latency: int

    def __post_init__(self) -> None:
        for name in ("busy", "latency"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer of at least 1, not {value!r}")


Timing = int | UnitTiming | Callable[[int], int | UnitTiming]
"""A duration d (busy = latency = d), a UnitTiming, or a function of the issue cycle to either."""


def _resolve(timing: Timing, issue: int) -> UnitTiming:
    value = timing(issue) if callable(timing) else timing
    if isinstance(value, UnitTiming):
        return value
    return UnitTiming(busy=value, latency=value)


class UnitModel:
    """One unit as the dispatcher sees it: when it takes an issue and when it completes."""

    def __init__(self) -> None:
        self.free_from = 0
        self.last_completion = -1

    def ready(self, cycle: int) -> bool:
        """Return whether the unit takes an offered instruction in `cycle`."""
        return cycle >= self.free_from

    def issue(self, cycle: int, timing: Timing) -> int:
        """Take an instruction in `cycle`; return the cycle in which it reports completion."""
        resolved = _resolve(timing, cycle)
        self.free_from = cycle + resolved.busy
        self.last_completion = max(cycle + resolved.latency, self.last_completion + 1)
        return self.last_completion


class Job(NamedTuple):
    """One instruction: its unit index, footprint, timing, and the first cycle it is offered."""

    unit: int
    ranges: Sequence[Access]
    timing: Timing
    arrival: int = 0


@dataclasses.dataclass(frozen=True)
class JobTimes:
    """Cycles in which an instruction was accepted, issued and completed, and its table entry."""

    dispatch: int
    issue: int
    complete: int
    tag: int


@dataclasses.dataclass
class _InFlight:
    tag: int
    unit: int
    ranges: Sequence[Access]
    complete: int


class DispatchModel:
    """The dispatcher with the parameters of `systolic.hdl.dispatcher.Dispatcher`."""

    def __init__(self, *, units: int = 3, table_entries: int = 16, queue_depth: int = 4,
                 ranges: int = 3) -> None:
        for name, value in (("units", units), ("table_entries", table_entries),
                            ("queue_depth", queue_depth), ("ranges", ranges)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer of at least 1, not {value!r}")
        self.units = units
        self.table_entries = table_entries
        self.queue_depth = queue_depth
        self.ranges = ranges

    def run(self, jobs: Iterable[Job | tuple[int, Sequence[Access], Timing]]) -> list[JobTimes]:
        """Return the cycles of every job, in program order."""
        units = [UnitModel() for _ in range(self.units)]
        recent_issues: list[deque[int]] = [deque(maxlen=self.queue_depth) for _ in units]
        in_flight: list[_InFlight] = []
        result: list[JobTimes] = []
        for index, raw in enumerate(jobs):
            job = Job(*raw)
            self._check(index, job)
            cycle = max(job.arrival, result[-1].dispatch + 1 if result else 0)
            in_flight = [entry for entry in in_flight if entry.complete >= cycle]
            if len(in_flight) >= self.table_entries:
                latest = sorted((entry.complete for entry in in_flight), reverse=True)
                cycle = max(cycle, latest[self.table_entries - 1] + 1)
            queue = recent_issues[job.unit]
            if len(queue) == self.queue_depth:
                cycle = max(cycle, queue[0] + 1)
            in_flight = [entry for entry in in_flight if entry.complete >= cycle]
            used = {entry.tag for entry in in_flight}
            tag = min(set(range(self.table_entries)) - used)

            issue = max(cycle + 1, units[job.unit].free_from)
            if queue:
                issue = max(issue, queue[-1] + 1)
            for entry in in_flight:
                if entry.unit != job.unit and entry.complete > cycle and any(
                    a.conflicts(b) for a in job.ranges for b in entry.ranges
                ):
                    issue = max(issue, entry.complete + 1)
            complete = units[job.unit].issue(issue, job.timing)
            queue.append(issue)
            in_flight.append(_InFlight(tag, job.unit, job.ranges, complete))
            result.append(JobTimes(cycle, issue, complete, tag))
        return result

    def _check(self, index: int, job: Job) -> None:
        if not 0 <= job.unit < self.units:
            raise ValueError(
                f"instruction {index}: unit {job.unit} is not one of the {self.units} units"
            )
        if len(job.ranges) > self.ranges:
            raise ValueError(
                f"instruction {index}: {len(job.ranges)} ranges exceed the {self.ranges} "
                "a footprint holds"
            )
