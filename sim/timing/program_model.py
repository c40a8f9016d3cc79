"""Analytic cycle model of the whole accelerator (`systolic.hdl.accelerator.Accelerator`).

`ProgramModel(config).run(instructions)` returns, for every instruction of a program (HALT
included), the cycles in which the accelerator accepted, issued and completed it, the total
cycle count and the accelerator's counters, exactly as the RTL reports them
(session contract "Cycle numbering": cycle 0 is the `start` cycle). It composes the
dispatcher's closed-form rules (`dispatch_model`, docs/hardware.md "Dispatcher") with the
units' exact timings (`load_timing`, `execute_timing`, `store_timing`), instruction by
instruction in program order, with no loop over cycles:

- The host offers instruction i from the cycle after instruction i - 1 was accepted; the
  first command is accepted in cycle 1 at the earliest (`busy` rises the cycle after `start`).
- accept(i) = the first t >= accept(i-1) + 1 with fewer than 16 older instructions whose
  completion is >= t and fewer than 4 older instructions of its unit whose issue is >= t.
- The instruction heads its queue from h = max(accept + 1, issue of its unit's previous + 1);
  its mask clears in v = max(h, completion + 1 of every older conflicting instruction of
  another unit that is still in flight after its acceptance cycle); the unit takes it in the
  first cycle >= v in which it is ready: LOAD after max(beats, 2) cycles of the previous LOAD,
  STORE-unit instructions one cycle after the previous completion, EXECUTE as
  `ExecuteTiming` says.
- LOAD completes beats + mem_latency + 2 cycles after its issue, a STORE-unit instruction
  `store_timing.duration` cycles after. EXECUTE's PRELOAD and COMPUTE strobes are merged by
  `hdl/completion_merge.py`: in order of their cycles (COMPUTE first on a tie), one per cycle,
  d_k = max(t_k, d_(k-1) + 1). A PRELOAD may strobe before an older COMPUTE, so the merged
  cycle of an instruction can depend on a younger one. The model merges each strobe as it
  comes, moving the older deliveries it delays; if an instruction already used a delivery
  that moves (a hazard or a full table), it returns to a checkpoint before that instruction
  and runs again with the younger strobes known (`ProgramTiming.rollbacks` counts these; they
  need small COMPUTEs whose completions crowd the merge, rare in real layers). After the run
  the model checks its deliveries against the exact merge of all strobes.
- HALT is accepted in the first cycle >= accept(i-1) + 1 after every earlier completion
  (the table is empty); its issue and completion are that cycle, and it is `total_cycles`.

The counters follow `hdl/accelerator.py`: `cycles` = total cycles; `instructions` = all
instructions; `unit_busy[u]` = cycles in which some instruction of unit u was issued and not
yet completed; `hazard_stall[u]` = cycles in which u's queue head waited for a conflicting
instruction while u was ready for it; `dispatch_stall` = cycles a non-HALT command was
refused (table or queue full).
"""

import bisect
import dataclasses
from collections import deque
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from systolic.config import ArrayConfig

from ..isa.instructions import (
    Add,
    Compute,
    ComputeOS,
    Copy,
    Halt,
    Instruction,
    Load,
    LoadTarget,
    Pool,
    Preload,
    Store,
)
from ..isa.memories import params_row_bytes
from .dispatch_model import MEMORY_ID
from .execute_timing import ExecuteTiming
from .load_timing import SETUP_CYCLES
from .store_timing import duration

__all__ = ["COUNTER_NAMES", "QUEUE_DEPTH", "TABLE_ENTRIES", "ProgramModel", "ProgramTiming"]

TABLE_ENTRIES = 16
"""In-flight table entries of the accelerator's dispatcher."""
QUEUE_DEPTH = 4
"""Per-unit queue entries of the accelerator's dispatcher."""
FIRST_ACCEPT = 1
"""The first cycle a command can be accepted in (`busy` rises the cycle after `start`)."""

LD, EX, ST = 0, 1, 2
_UNIT_NAMES = ("ld", "ex", "st")
COUNTER_NAMES: tuple[str, ...] = (
    "cycles", "instructions", "dispatch_stall",
    *(f"unit_busy_{u}" for u in _UNIT_NAMES), *(f"hazard_stall_{u}" for u in _UNIT_NAMES),
)
"""Names of the counters `ProgramTiming.counters` holds (unit_busy[u] as unit_busy_ld ...)."""

_CHECKPOINT_EVERY = 32
_CHECKPOINTS_KEPT = 16
_MAX_ROLLBACKS = 10**6

# Per instruction class: its unit, and for each footprint range (in `footprint` order) the
# field its position moves with. The footprint of an instruction is that of the same
# instruction with these fields at zero (and `ext` reduced modulo the bus width), shifted.
_POSITIONS: dict[type[Instruction], tuple[int, tuple[str, ...]]] = {
    Load: (LD, ("row", "ext")),
    Preload: (EX, ("row",)),
    Compute: (EX, ("in_row", "acc_row")),
    ComputeOS: (EX, ("in_row", "wt_row", "acc_row")),
    Store: (ST, ("acc_row", "param_row", "ext")),
    Pool: (ST, ("in_row", "ext")),
    Add: (ST, ("a_row", "b_row", "ext")),
    Copy: (ST, ("in_row", "ext")),
}

# Fields that change computed values but neither the footprint nor the timing.
_VALUE_ONLY = frozenset({
    "flip_sign", "accumulate", "mode", "zero_point", "lo", "hi", "multiplier", "shift", "zp_in",
    "zp_out", "multiplier_a", "multiplier_b", "zp_a", "zp_b",
})

Range = tuple[int, int, int, bool]  # (memory id, first, last, write)


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


class _Describer:
    """Unit, footprint and cost of instructions, cached by the fields they depend on.

    Footprints move with the position fields (`_POSITIONS`) and the cost depends on `ext`
    only modulo the bus width, so the cache key is the class, the remaining fields but
    those that change values only (`_VALUE_ONLY`), and `ext % bus_bytes`.
    """

    def __init__(self, config: ArrayConfig) -> None:
        self.config = config
        self.bus = config.bus_bytes
        self._dim = config.dim
        self._cache: dict[tuple[Any, ...], tuple[int, tuple[Range, ...], int]] = {}
        self._keys: dict[type, tuple[attrgetter[Any], attrgetter[Any], bool]] = {}
        for cls, (_, positions) in _POSITIONS.items():
            names = [f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                     if f.name not in positions and f.name not in _VALUE_ONLY]
            # attrgetter of one name returns the value, of several a tuple: always ask for two
            where = attrgetter(*positions, *positions[:1]) if len(positions) == 1 else attrgetter(
                *positions)
            self._keys[cls] = (attrgetter(*names), where, "ext" in positions)

    def describe(self, instr: Instruction) -> tuple[int, tuple[Range, ...], int]:
        """Return (unit, footprint ranges, cost): cost is LOAD beats or a STORE-unit duration."""
        cls = type(instr)
        if cls is Compute:  # the most frequent instructions: their footprints directly
            in_row, m, acc_row = instr.in_row, instr.m, instr.acc_row  # type: ignore[attr-defined]
            return EX, ((0, in_row, in_row + m - 1, False),
                        (2, acc_row, acc_row + m - 1, True)), 0
        if cls is Preload:
            row = instr.row  # type: ignore[attr-defined]
            return EX, ((1, row, row + instr.k - 1, False),), 0  # type: ignore[attr-defined]
        if cls is ComputeOS:  # ComputeOS.footprint, directly
            in_row, m, k = instr.in_row, instr.m, instr.k  # type: ignore[attr-defined]
            wt_row, acc_row = instr.wt_row, instr.acc_row  # type: ignore[attr-defined]
            in_last = in_row + (-(-k // self._dim) - 1) * instr.a_stride + m - 1  # type: ignore[attr-defined]
            return EX, ((0, in_row, in_last, False), (1, wt_row, wt_row + k - 1, False),
                        (2, acc_row, acc_row + m - 1, True)), 0
        shape, where, has_ext = self._keys[cls]
        offsets = where(instr)
        key: tuple[Any, ...]
        if has_ext:
            ext = offsets[-1]
            phase = ext % self.bus
            offsets = (*offsets[:-1], ext - phase)
            key = (cls, shape(instr), phase)
        else:
            key = (cls, shape(instr))
        cached = self._cache.get(key)
        if cached is None:
            cached = self._fill(key, instr, offsets)
        unit, rel, cost = cached
        if len(rel) == 2:  # LOAD, COPY, POOL: unrolled
            (m0, f0, l0, w0), (m1, f1, l1, w1) = rel
            o0, o1 = offsets[0], offsets[1]
            return unit, ((m0, f0 + o0, l0 + o0, w0), (m1, f1 + o1, l1 + o1, w1)), cost
        return unit, tuple([(mem, first + o, last + o, write)
                            for (mem, first, last, write), o in zip(rel, offsets)]), cost

    def _fill(self, key: tuple[Any, ...], instr: Instruction,
              offsets: tuple[int, ...]) -> tuple[int, tuple[Range, ...], int]:
        unit, positions = _POSITIONS[type(instr)]
        footprint = instr.footprint(self.config)
        if len(footprint) != len(positions):
            raise AssertionError(f"{instr.MNEMONIC}: footprint does not match its positions")
        rel = tuple((MEMORY_ID[a.memory], a.first - o, a.last - o, a.write)
                    for a, o in zip(footprint, offsets, strict=False))
        if isinstance(instr, Load):
            cost = self._load_beats(instr)
        elif unit == ST:
            cost = duration(instr, self.config)
        else:
            cost = 0
        value = (unit, rel, cost)
        self._cache[key] = value
        return value

    def _load_beats(self, instr: Load) -> int:
        """Return the aligned beats of every segment of every row (vectorised)."""
        config, bus = self.config, self.bus
        if instr.mem is LoadTarget.PARAMS:
            runs = [(0, params_row_bytes(config))]
        else:
            runs = [(s.address, s.length) for s in instr.element_pattern.runs(config.operand_bytes)]
        if bus == 1:
            return instr.count * sum(length for _, length in runs)
        bases = instr.row_pattern.addresses(instr.count)
        total = 0
        for offset, length in runs:
            starts = bases + offset
            total += int(((starts + (length - 1)) // bus - starts // bus).sum()) + instr.count
        return total


def _merge(strobes: list[tuple[int, int, int]]) -> dict[int, int]:
    """Return the merged delivery cycle of each strobe (cycle, order key, index)."""
    delivered: dict[int, int] = {}
    last = -(10**18)
    for cycle, _, index in sorted(strobes):
        last = cycle if cycle > last else last + 1
        delivered[index] = last
    return delivered


class ProgramModel:
    """The accelerator's cycle model for one configuration (see the module docstring)."""

    def __init__(self, config: ArrayConfig, *, table_entries: int = TABLE_ENTRIES,
                 queue_depth: int = QUEUE_DEPTH) -> None:
        self.config = config
        self.table_entries = table_entries
        self.queue_depth = queue_depth
        self._describer = _Describer(config)

    def run(self, instructions: Sequence[Instruction]) -> ProgramTiming:
        """Return the timing of `instructions` (a program: it must end with its only HALT)."""
        count = len(instructions)
        if count == 0 or not isinstance(instructions[-1], Halt):
            raise ValueError("a program must end with HALT")
        describe = self._describer.describe
        body = instructions[:-1]
        if any(isinstance(instr, Halt) for instr in body):
            index = next(i for i, instr in enumerate(body) if isinstance(instr, Halt))
            raise ValueError(f"instruction {index}: HALT before the end of the program")
        infos = [describe(instr) for instr in body]
        result, strobes, rollbacks = self._pass(instructions, infos)
        exact = _merge(strobes)
        if any(result.complete[index] != cycle for index, cycle in exact.items()):
            raise RuntimeError("the EXECUTE completion merge was not resolved")  # pragma: no cover
        return dataclasses.replace(result, rollbacks=rollbacks)

    def _pass(self, instructions: Sequence[Instruction],
              infos: list[tuple[int, tuple[Range, ...], int]],
              ) -> tuple[ProgramTiming, list[tuple[int, int, int]], int]:
        """Time the program; return the timing, EXECUTE's strobes and the rollbacks made.

        EXECUTE's strobes (cycle, COMPUTE 0 / PRELOAD 1, index) are merged as they come, in
        `window` (merge order). A younger PRELOAD strobe can come before an older COMPUTE
        strobe and delay its delivery; when a younger instruction already used the older
        delivery (a hazard or a full table), the model returns to a checkpoint before that
        use and runs again knowing the younger strobes (`announced`): every event before the
        changed delivery cycle was exact, so those strobes are too.
        """
        config = self.config
        entries, depth = self.table_entries, self.queue_depth
        latency = config.mem_latency + SETUP_CYCLES
        n = len(infos)
        accepts = [0] * (n + 1)
        issues = [0] * (n + 1)
        completes = [0] * (n + 1)
        raw_of: list[int | None] = [None] * n  # EXECUTE strobe cycles of this attempt
        strobes: list[tuple[int, int, int]] = []
        announced: dict[int, int] = {}  # index -> strobe cycle of a not yet timed instruction
        checkpoints: dict[int, tuple[Any, ...]] = {}
        rollbacks = 0

        execute = ExecuteTiming(config)
        recent: list[deque[int]] = [deque(maxlen=depth) for _ in range(3)]
        free_from = [0, 0, 0]  # LD and ST: first cycle the unit takes its next instruction
        # In-flight instructions: [complete, unit, ranges, index] (EX entries may be updated).
        in_flight: list[list[Any]] = []
        flight_of: dict[int, list[Any]] = {}
        # EXECUTE strobes that a younger strobe may still precede: [cycle, key, index,
        # delivered, announced], in merge order; deliveries of strobes dropped are final.
        window: list[list[int]] = []
        window_last = -(10**18)
        read: dict[int, int] = {}  # EX instruction in `window` -> first instruction that used it
        open_ex: set[int] = set()  # the instructions in `window`
        dispatch_stall = 0
        hazard_stall = [0, 0, 0]
        accept = FIRST_ACCEPT - 1

        def remerge(position: int, stale: tuple[int, int] | None, *, new: bool
                    ) -> tuple[int, int] | None:
            """Recompute deliveries from `position` (a new strobe there if `new`).

            Return the earliest (reader, cycle) of `stale` and of a delivery that changed
            after an instruction (reader) used it.
            """
            last = window[position - 1][3] if position else window_last
            known = position + 1 if new else position  # entries from here had a delivery
            for j in range(position, len(window)):
                entry = window[j]
                cycle = entry[0] if entry[0] > last else last + 1
                if j >= known:
                    if cycle == entry[3]:
                        break
                    older = entry[2]
                    if not entry[4] and raw_of[older] is not None:
                        reader = read.get(older)
                        if reader is not None and (stale is None or reader < stale[0]):
                            stale = (reader, min(entry[3], cycle))
                        completes[older] = cycle
                        if older in flight_of:
                            flight_of[older][0] = cycle
                entry[3] = last = cycle
            return stale

        index = 0
        while index < n:
            if index % _CHECKPOINT_EVERY == 0 and index not in checkpoints:
                checkpoints[index] = (
                    accept, dispatch_stall, list(hazard_stall), [deque(q, depth) for q in recent],
                    list(free_from), [list(e) for e in in_flight], [list(e) for e in window],
                    window_last, dict(read), execute.copy(), len(strobes),
                    {e[2]: completes[e[2]] for e in window if not e[4]},
                )
                if len(checkpoints) > _CHECKPOINTS_KEPT:  # keep the start and the latest
                    del checkpoints[min(k for k in checkpoints if k)]
            unit, ranges, cost = infos[index]
            offered = accept + 1
            t = offered
            if len(in_flight) >= entries:  # (completed entries are dropped only here)
                in_flight = [e for e in in_flight if e[0] >= t]
                if len(in_flight) >= entries:
                    ends = sorted((e[0] for e in in_flight), reverse=True)
                    t = ends[entries - 1] + 1
                    for e in in_flight:
                        if e[3] in open_ex:
                            read.setdefault(e[3], index)
            queue = recent[unit]
            if len(queue) == depth and queue[0] >= t:
                t = queue[0] + 1
            if t != offered:
                dispatch_stall += t - offered
                in_flight = [e for e in in_flight if e[0] >= t]
            accept = t
            head = t + 1
            if queue and queue[-1] >= head:
                head = queue[-1] + 1
            clear = head
            if ranges:
                for end, other, theirs, owner in in_flight:
                    if other != unit and end > t and (end >= clear or owner in open_ex):
                        for mem, first, last, write in ranges:
                            for mem2, first2, last2, write2 in theirs:
                                if (mem == mem2 and (write or write2) and first <= last2
                                        and first2 <= last):
                                    break
                            else:
                                continue
                            if owner in open_ex:
                                read.setdefault(owner, index)
                            if end >= clear:
                                clear = end + 1
                            break
            stale = None
            if unit == EX:
                instr = instructions[index]
                # the cycle EX would take it, for the hazard-stall count (only when it waited)
                ready_from = execute.ready_from(instr) if clear > head else clear
                timing = execute.issue(instr, clear)
                issue = timing.taken
                raw = raw_of[index] = timing.completed
                strobe = (raw, 1 if isinstance(instr, Preload) else 0, index)
                strobes.append(strobe)
                while window and window[0][0] < t:  # no later strobe can come before these
                    dropped = window.pop(0)
                    window_last = dropped[3]
                    read.pop(dropped[2], None)
                    open_ex.discard(dropped[2])
                item = None
                if index in announced:
                    announced[index] = raw
                    for position, entry in enumerate(window):
                        if entry[2] == index:
                            if entry[0] == raw:
                                entry[4] = 0
                                item = entry
                            else:
                                del window[position]
                                stale = remerge(position, stale, new=False)
                            break
                if item is None:
                    item = [*strobe, 0, 0]
                    open_ex.add(index)
                    if not window or item > window[-1]:  # the latest strobe: nothing moves
                        last = window[-1][3] if window else window_last
                        item[3] = raw if raw > last else last + 1
                        window.append(item)
                    else:
                        position = bisect.bisect(window, item)
                        window.insert(position, item)
                        stale = remerge(position, stale, new=True)
                complete = item[3]
            else:
                ready_from = free_from[unit]
                issue = max(ready_from, clear)
                if unit == LD:
                    free_from[LD] = issue + max(2, cost)
                    complete = issue + cost + latency
                else:
                    complete = issue + cost
                    free_from[ST] = complete + 1
            if clear > head:
                stalled = clear - max(ready_from, head)
                if stalled > 0:
                    hazard_stall[unit] += stalled
            queue.append(issue)
            flight = [complete, unit, ranges, index]
            in_flight.append(flight)
            if unit == EX:
                flight_of[index] = flight
                if len(flight_of) > 4 * entries:
                    flight_of = {e[3]: e for e in in_flight if e[1] == EX}
            accepts[index], issues[index], completes[index] = accept, issue, complete
            if stale is None:
                index += 1
                continue
            # A delivery some instruction used has moved: go back before that use, knowing
            # the strobes before the moved delivery (every event before it was exact).
            while stale is not None:
                rollbacks += 1
                if rollbacks > _MAX_ROLLBACKS:
                    raise RuntimeError("the EXECUTE completion merge did not settle")
                reader, horizon = stale
                for j in range(reader + 1, index + 1):
                    cycle = raw_of[j]
                    if cycle is not None and cycle < horizon:
                        announced[j] = cycle
                back = max(k for k in checkpoints if k <= reader)
                (accept, dispatch_stall, hazard_stall, recent, free_from, in_flight, window,
                 window_last, read, execute, kept, saved) = checkpoints[back]
                checkpoints = {k: v for k, v in checkpoints.items() if k < back}
                hazard_stall = list(hazard_stall)
                recent = [deque(q, depth) for q in recent]
                free_from = list(free_from)
                in_flight = [list(e) for e in in_flight]
                window = [list(e) for e in window]
                read = dict(read)
                execute = execute.copy()
                del strobes[kept:]
                raw_of[back:index + 1] = [None] * (index + 1 - back)
                for j, cycle in saved.items():
                    completes[j] = cycle
                flight_of = {e[3]: e for e in in_flight if e[1] == EX}
                open_ex = {e[2] for e in window}
                index = back
                stale = None
                for j, cycle in sorted(announced.items()):
                    if j < back:
                        continue
                    for position, entry in enumerate(window):
                        if entry[2] == j:
                            if entry[0] != cycle:
                                del window[position]
                                stale = remerge(position, stale, new=False)
                            break
                    if j in open_ex and any(e[2] == j for e in window):
                        continue
                    item = [cycle, 1 if isinstance(instructions[j], Preload) else 0, j, 0, 1]
                    position = bisect.bisect(window, item)
                    window.insert(position, item)
                    open_ex.add(j)
                    stale = remerge(position, stale, new=True)
        halt = max(accept + 1, max(completes[:n], default=0) + 1)
        accepts[n] = issues[n] = completes[n] = halt
        counters = {
            "cycles": halt,
            "instructions": n + 1,
            "dispatch_stall": dispatch_stall,
        }
        for u, name in enumerate(_UNIT_NAMES):
            counters[f"unit_busy_{name}"] = _union_length(
                (issues[i], completes[i]) for i in range(n) if infos[i][0] == u)
        for u, name in enumerate(_UNIT_NAMES):
            counters[f"hazard_stall_{name}"] = hazard_stall[u]
        result = ProgramTiming(tuple(accepts), tuple(issues), tuple(completes), halt, counters)
        return result, strobes, rollbacks


def _union_length(intervals: Any) -> int:
    """Return the number of cycles covered by half-open [start, end) intervals sorted by start."""
    total = 0
    low = high = None
    for start, end in intervals:
        if high is None or start > high:
            if high is not None:
                total += high - low
            low, high = start, end
        elif end > high:
            high = end
    if high is not None:
        total += high - low
    return total

