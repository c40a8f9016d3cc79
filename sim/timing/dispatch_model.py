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
- issue(i) = max(accept(i) + 3, issue of the unit's previous instruction + 1, the cycle its unit
  is free again, completion + 1 of every older conflicting instruction of another unit) (the
  cycle after acceptance compares the hazards, the next one records them in the mask);
- complete(i) follows the unit's timing (`UnitModel`).
"""

import dataclasses
import functools
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from systolic.isa.memories import Access, Memory

__all__ = [
    "HAZARD_CYCLES",
    "MEMORY_ID",
    "UNITS",
    "DispatchModel",
    "DispatchState",
    "Job",
    "JobTimes",
    "Timing",
    "UnitModel",
    "UnitTiming",
    "hazard_stall",
]

HAZARD_CYCLES = 3
"""An instruction accepted in cycle t issues in t + HAZARD_CYCLES at the earliest: the
dispatcher compares its footprint with the table in t + 1 and records its mask in t + 2."""

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

    def copy(self) -> "UnitModel":
        """Return an independent copy of the unit's state (a checkpoint)."""
        clone = UnitModel()
        clone.free_from, clone.last_completion = self.free_from, self.last_completion
        return clone


class DispatchState:
    """The dispatcher's in-flight table and unit queues, advanced one instruction at a time.

    Instructions are known by their program index; `completes[i]` is instruction i's
    completion cycle, read whenever the rules need it (the caller may move a completion
    later while the instruction is in flight: the EXECUTE completion merge does). The caller
    applies the rules in order for each instruction: `accept`, `head`, `mask_clear`, then
    `record` with the cycle its unit took it. `dispatch_stall` and `hazard_stall[unit]` are
    the accelerator's counters of the same names (docs/cycle-model.md, "Counters").
    """

    def __init__(self, completes: Sequence[int], *, units: int = 3, table_entries: int = 16,
                 queue_depth: int = 4, first_accept: int = 0) -> None:
        self.completes = completes
        self.table_entries = table_entries
        self.queue_depth = queue_depth
        self.last_accept = first_accept - 1
        self.queues: list[deque[int]] = [deque(maxlen=queue_depth) for _ in range(units)]
        self.table: list[tuple[int, int]] = []  # (unit, index) of each instruction in flight
        self.dispatch_stall = 0
        self.hazard_stall = [0] * units

    def copy(self) -> "DispatchState":
        """Return an independent copy (a checkpoint; it shares `completes`)."""
        clone = object.__new__(DispatchState)
        clone.__dict__.update(self.__dict__)
        clone.queues = [deque(queue, self.queue_depth) for queue in self.queues]
        clone.table = list(self.table)
        clone.hazard_stall = list(self.hazard_stall)
        return clone

    def accept(self, unit: int, arrival: int = 0) -> tuple[int, list[int]]:
        """Return the cycle the next instruction (of `unit`, offered from max(`arrival`, the
        previous accept + 1)) is accepted in, and the instructions whose completions decided
        it: every one in flight when the table was full, else none.

        The accept cycle is the first cycle t from the offer on with fewer than
        `table_entries` instructions completing in t or later and fewer than `queue_depth`
        of `unit`'s instructions issuing in t or later. (Entries completed before the offer
        leave the table when it looks full: no rule reads them.)
        """
        offered = max(arrival, self.last_accept + 1)
        cycle = offered
        users: list[int] = []
        if len(self.table) >= self.table_entries:
            completes = self.completes
            self.table = [entry for entry in self.table if completes[entry[1]] >= offered]
            if len(self.table) >= self.table_entries:
                ends = sorted((completes[index] for _, index in self.table), reverse=True)
                cycle = ends[self.table_entries - 1] + 1
                users = [index for _, index in self.table]
        queue = self.queues[unit]
        if len(queue) == self.queue_depth and queue[0] >= cycle:
            cycle = queue[0] + 1
        self.dispatch_stall += cycle - offered
        self.last_accept = cycle
        return cycle, users

    def head(self, unit: int, accept: int) -> int:
        """Return the first cycle an instruction of `unit` accepted in `accept` heads its queue
        (the queue is in order and issues at most one instruction per cycle)."""
        queue = self.queues[unit]
        return max(accept + 1, queue[-1] + 1) if queue else accept + 1

    def mask_clear(self, unit: int, accept: int, head: int,
                   conflicts: Callable[[int], bool]) -> tuple[int, list[int]]:
        """Return the cycle an instruction of `unit` accepted in `accept` (heading its queue
        from `head`) has its mask clear, and the instructions it waits for.

        The mask is compared in the cycle after `accept` and recorded in the next (its
        `pending` bit holds the instruction until then), so it is clear from `accept + 3` at
        the earliest. It waits for
        every instruction in flight of another unit that `conflicts` (given its index) and
        completes after `accept` (a completion in the accept cycle is not recorded in the
        mask): the mask clears after the last of their completions.
        """
        clear = max(head, accept + HAZARD_CYCLES)
        waited = []
        for other, owner in self.table:
            end = self.completes[owner]
            if other != unit and end > accept and conflicts(owner):
                waited.append(owner)
                clear = max(clear, end + 1)
        return clear, waited

    def record(self, unit: int, index: int, issue: int, *, stalled: int = 0) -> None:
        """Record instruction `index` of `unit`, issued in `issue`, and the cycles its queue's
        head waited for its mask while the unit was ready (`hazard_stall`)."""
        self.queues[unit].append(issue)
        self.table.append((unit, index))
        self.hazard_stall[unit] += stalled

    def in_flight(self, cycle: int) -> list[int]:
        """Return the indices of the instructions in the table in `cycle` (completing then
        or later)."""
        return [index for _, index in self.table if self.completes[index] >= cycle]


def hazard_stall(head: int, clear: int, ready_from: int) -> int:
    """Return the cycles a queue head (from `head`) waited only for its mask (until `clear`)
    while its unit was ready for it (from `ready_from`)."""
    return max(0, clear - max(ready_from, head)) if clear > head else 0


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
        completes: list[int] = []
        state = DispatchState(completes, units=self.units, table_entries=self.table_entries,
                              queue_depth=self.queue_depth)
        footprints: list[Sequence[Access]] = []
        tags: list[int] = []
        result: list[JobTimes] = []
        for index, raw in enumerate(jobs):
            job = Job(*raw)
            self._check(index, job)
            cycle, _ = state.accept(job.unit, job.arrival)
            tag = min(set(range(self.table_entries)) - {tags[i] for i in state.in_flight(cycle)})
            head = state.head(job.unit, cycle)
            clear, _ = state.mask_clear(
                job.unit, cycle, head, functools.partial(_conflict, job.ranges, footprints))
            issue = max(clear, units[job.unit].free_from)
            complete = units[job.unit].issue(issue, job.timing)
            completes.append(complete)
            footprints.append(job.ranges)
            tags.append(tag)
            state.record(job.unit, index, issue)
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


def _conflict(ranges: Sequence[Access], footprints: Sequence[Sequence[Access]], owner: int
              ) -> bool:
    return any(mine.conflicts(theirs) for mine in ranges for theirs in footprints[owner])
