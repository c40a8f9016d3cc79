# ruff: noqa: FURB136, PLR1730  (the main loop compares ints inline: max() costs a call)
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

For speed (a ResNet-50 of 300,000 instructions in well under a second) the static facts of
every instruction come from `program_facts.ProgramFacts` (numpy, class by class, one
`Describer.describe` per distinct shape), and one loop keeps the state in local variables:
the EXECUTE unit's schedule (`ExecuteTiming`'s rules, inlined; `tests/sim/timing` checks them
against the RTL), the in-flight table split by unit, whose conflicts are found from
per-memory masks and row spans. That loop (`_pass`) is the specification: `run` uses its
port to C (`native_pass`, `sim/native/timing.c`, identical results) when the native library
is available and `native` is not False, and `_pass` otherwise.
"""

import bisect
import gc
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Halt, Instruction
from systolic.sim.timing.execute_timing import ExecuteTiming
from systolic.sim.timing.load_timing import SETUP_CYCLES
from systolic.sim.timing.native_pass import native_pass
from systolic.sim.timing.program_facts import (
    ALL_MEMORIES,
    EX,
    K_COMPUTE,
    K_PRELOAD,
    LD,
    MEMORY_SETS,
    SHARED,
    ST,
    Describer,
    ProgramFacts,
    overlap,
)
from systolic.sim.timing.program_timing import ProgramTiming

__all__ = ["COUNTER_NAMES", "QUEUE_DEPTH", "TABLE_ENTRIES", "ProgramModel", "ProgramTiming"]

TABLE_ENTRIES = 16
"""In-flight table entries of the accelerator's dispatcher."""
QUEUE_DEPTH = 4
"""Per-unit queue entries of the accelerator's dispatcher."""
FIRST_ACCEPT = 1
"""The first cycle a command can be accepted in (`busy` rises the cycle after `start`)."""

_Describer = Describer  # (its former name here)
_NEVER = -(10**9)  # as `execute_timing._NEVER`
_UNIT_NAMES = ("ld", "ex", "st")
COUNTER_NAMES: tuple[str, ...] = (
    "cycles", "instructions", "dispatch_stall",
    *(f"unit_busy_{u}" for u in _UNIT_NAMES), *(f"hazard_stall_{u}" for u in _UNIT_NAMES),
)
"""Names of the counters `ProgramTiming.counters` holds (unit_busy[u] as unit_busy_ld ...)."""

_CHECKPOINT_EVERY = 128  # (rollbacks are rare: a checkpoint costs more than a replay)
_CHECKPOINTS_KEPT = 16
_MAX_ROLLBACKS = 10**6


def _merge_agrees(raw_of: list[int | None], kinds: list[int], completes: list[int]) -> bool:
    """Return whether every EXECUTE `complete` equals the exact merge of all strobes.

    The strobes (cycle, COMPUTE 0 / PRELOAD 1, index) are delivered in sorted order, one per
    cycle: d_k = max(t_k, d_(k-1) + 1), that is d_k - k = the running maximum of t_j - j.
    """
    kind = np.array(kinds, dtype=np.int8)
    where = np.flatnonzero(kind >= K_COMPUTE)
    if not where.size:
        return True
    picked = where.tolist()
    cycles = np.fromiter(map(raw_of.__getitem__, picked), dtype=np.int64, count=len(picked))
    keys = (kind[where] == K_PRELOAD).astype(np.int64)
    order = np.lexsort((where, keys, cycles))
    steps = np.arange(order.size, dtype=np.int64)
    delivered = np.maximum.accumulate(cycles[order] - steps) + steps
    got = np.fromiter(map(completes.__getitem__, picked), dtype=np.int64,
                      count=len(picked))[order]
    return bool(np.array_equal(delivered, got))


def _union_lengths(units: list[int], issues: list[int], completes: list[int], n: int
                   ) -> list[int]:
    """Return, per unit, the cycles covered by its [issue, complete) intervals.

    A unit's issues increase in program order and complete >= issue, so the running maximum
    of the completions is the end of the current run of overlapping intervals.
    """
    unit = np.array(units, dtype=np.int8)
    starts_all = np.array(issues[:n], dtype=np.int64)
    ends_all = np.array(completes[:n], dtype=np.int64)
    lengths = []
    for u in (LD, EX, ST):
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


class ProgramModel:
    """The accelerator's cycle model for one configuration (see the module docstring)."""

    def __init__(self, config: ArrayConfig, *, table_entries: int = TABLE_ENTRIES,
                 queue_depth: int = QUEUE_DEPTH, native: bool = True) -> None:
        """`native=False` forces the Python pass (else the C loop runs when it is available,
        `native_pass`)."""
        self.config = config
        self.table_entries = table_entries
        self.queue_depth = queue_depth
        self.native = native
        self._describer = Describer(config)

    def run(self, instructions: Sequence[Instruction], *, words: np.ndarray | None = None
            ) -> ProgramTiming:
        """Return the timing of `instructions` (a program: it must end with its only HALT).

        `words`, when given, is their encoding (`Program.words`: shape (n, 8), HALT
        included), which the facts are read from; else they are encoded here."""
        count = len(instructions)
        if words is not None and words.shape[0] != count:
            raise ValueError(f"words has {words.shape[0]} rows for {count} instructions")
        if count == 0 or not isinstance(instructions[-1], Halt):
            raise ValueError("a program must end with HALT")
        body = instructions[:-1]
        if any(issubclass(cls, Halt) for cls in set(map(type, body))):
            index = next(i for i, instr in enumerate(body) if isinstance(instr, Halt))
            raise ValueError(f"instruction {index}: HALT before the end of the program")
        # The run allocates some million tuples and lists that hold no reference cycles:
        # the cyclic collector's passes over them (and the program) would double its time.
        collecting = gc.isenabled()
        gc.disable()
        try:
            facts = ProgramFacts(self._describer, body, self.config.dataflow is Dataflow.WS,
                                 words=None if words is None else words[:-1])
            if self.native:
                timing = native_pass(self.config, self.table_entries, self.queue_depth, facts)
                if timing is not None:
                    return timing
            return self._pass(facts, len(body))
        finally:
            if collecting:
                gc.enable()

    def _pass(self, facts: ProgramFacts, n: int) -> ProgramTiming:
        """Time the program described by `facts` (n instructions, HALT excluded).

        EXECUTE's strobes (cycle, COMPUTE 0 / PRELOAD 1, index) are merged as they come, in
        `window` (merge order). A younger PRELOAD strobe can come before an older COMPUTE
        strobe and delay its delivery; when a younger instruction already used the older
        delivery (a hazard or a full table), the model returns to a checkpoint before that
        use and runs again knowing the younger strobes (`announced`): every event before the
        changed delivery cycle was exact, so those strobes are too. The EXECUTE unit's
        schedule (`ExecuteTiming`, inlined) is kept in local variables.
        """
        config = self.config
        entries, depth = self.table_entries, self.queue_depth
        latency = config.mem_latency + SETUP_CYCLES
        kinds, units, masks, args, ks = (
            facts.kinds, facts.units, facts.masks, facts.args, facts.ks)
        # per set of memories: the (first rows, last rows) lists of each
        spans_in = tuple(tuple((facts.firsts[m], facts.lasts[m]) for m in memories)
                         for memories in MEMORY_SETS)
        footprint = facts.footprint
        accepts = [0] * (n + 1)
        issues = [0] * (n + 1)
        completes = [0] * (n + 1)
        raw_of: list[int | None] = [None] * n  # EXECUTE strobe cycles of this attempt
        announced: dict[int, int] = {}  # index -> strobe cycle of a not yet timed instruction
        checkpoints: dict[int, tuple[Any, ...]] = {}
        rollbacks = 0

        # The EXECUTE unit's state (`ExecuteTiming`'s fields, from its reset state).
        execute = ExecuteTiming(config)
        rows, dim = config.rows, config.dim
        array_latency = config.rows + config.cols - 1
        os_drain = 2 * config.rows + config.cols - 1
        last_taken = -1
        w_free = w_last = loaded = activated = a_free = a_last = newest = slot_free = 0
        closed = pending = False
        loader_free = bank0 = bank1 = beat_taken = tile_end = chunks = 0
        if config.dataflow is Dataflow.WS:
            state = vars(execute)
            w_free, w_last = state["_weights"].free, state["_weights"].last_take
            a_free, a_last = state["_acts"].free, state["_acts"].last_take
            loaded, activated = state["_loaded"], state["_activated"]
            newest, slot_free = state["_newest_activated"], state["_slot_free"]
            closed, pending = state["_closed"], state["_pending"]
        else:
            loader_free = beat_taken = tile_end = bank0 = bank1 = _NEVER

        recent: list[deque[int]] = [deque(maxlen=depth) for _ in range(3)]
        free_ld = free_st = 0  # first cycle the LOAD / STORE unit takes its next instruction
        # In-flight instructions by unit: [complete, unit, index, mask], and for each unit the
        # lists of the other units. Only EX entries change (with `completes`, which always
        # holds the same cycle): a checkpoint shares them and restores them from `completes`.
        flights: list[list[list[Any]]] = [[], [], []]
        others = ((flights[1], flights[2]), (flights[0], flights[2]), (flights[0], flights[1]))
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
        next_checkpoint = 0  # the next multiple of _CHECKPOINT_EVERY (none is kept beyond)
        flight_limit = 4 * entries
        flying = 0  # entries in `flights`
        while index < n:
            if index == next_checkpoint:
                next_checkpoint += _CHECKPOINT_EVERY
                checkpoints[index] = (
                    accept, dispatch_stall, list(hazard_stall), [deque(q, depth) for q in recent],
                    free_ld, free_st, [list(lst) for lst in flights],
                    [list(e) for e in window],
                    window_last, dict(read),
                    (last_taken, w_free, w_last, loaded, activated, a_free, a_last, newest,
                     slot_free, closed, pending, loader_free, bank0, bank1, beat_taken,
                     tile_end, chunks),
                    {e[2]: completes[e[2]] for e in window if not e[4]},
                )
                if len(checkpoints) > _CHECKPOINTS_KEPT:  # keep the start and the latest
                    keys = iter(checkpoints)  # (ascending: taken in order, later ones dropped)
                    first = next(keys)
                    del checkpoints[first if first else next(keys)]
            unit = units[index]
            offered = accept + 1
            t = offered
            # (entries completed before t are dropped here and below; they no longer count)
            if flying >= entries:
                for lst in flights:
                    lst[:] = [e for e in lst if e[0] >= t]
                flying = len(flights[0]) + len(flights[1]) + len(flights[2])
                if flying >= entries:
                    ends = sorted([e[0] for lst in flights for e in lst], reverse=True)
                    t = ends[entries - 1] + 1
                    for lst in flights:
                        for e in lst:
                            if e[2] in open_ex:
                                read.setdefault(e[2], index)
            queue = recent[unit]
            if len(queue) == depth and queue[0] >= t:
                t = queue[0] + 1
            if t != offered:
                dispatch_stall += t - offered
            accept = t
            head = t + 1
            if queue and queue[-1] >= head:
                head = queue[-1] + 1
            clear = head
            mask = masks[index]
            if mask:
                writes = mask >> 8 & ALL_MEMORIES
                for lst in others[unit]:
                    for end, _, owner, theirs_mask in lst:
                        if end <= t or end < clear and owner not in open_ex:
                            continue
                        common = (writes & theirs_mask | mask & theirs_mask >> 8) & ALL_MEMORIES
                        if common:
                            if (mask | theirs_mask) & SHARED:
                                if not overlap(footprint(index), footprint(owner)):
                                    continue
                            else:
                                for firsts, lasts in spans_in[common]:
                                    if (firsts[index] <= lasts[owner]
                                            and firsts[owner] <= lasts[index]):
                                        break
                                else:
                                    continue
                            if owner in open_ex:
                                read.setdefault(owner, index)
                            if end >= clear:
                                clear = end + 1
            stale = None
            if unit == EX:
                kind = kinds[index]
                earliest = last_taken + 1
                ready_from = earliest
                if clear > earliest:
                    earliest = clear
                if kind == K_COMPUTE:
                    m = args[index]
                    if slot_free > ready_from:
                        ready_from = slot_free
                    taken = slot_free if slot_free > earliest else earliest
                    start = taken + 1 if taken + 1 > a_free else a_free
                    slot_free = start
                    first = a_last if a_last > start + 1 else start + 1
                    first_take = first + 1
                    if closed:
                        if loaded + 1 > first_take:
                            first_take = loaded + 1
                        newest = first_take
                    a_free = first if m == 1 else first_take + m - 2
                    a_last = first_take + m - 1
                    closed = pending = False
                    raw = first_take + m - 1 + array_latency
                    key = 0
                elif kind == K_PRELOAD:
                    if w_free > ready_from:
                        ready_from = w_free
                    if pending and slot_free > ready_from:
                        ready_from = slot_free
                    taken = w_free if w_free > earliest else earliest
                    if pending and slot_free > taken:
                        taken = slot_free
                    if pending or taken > a_free:  # a dummy row closes the tile
                        start = taken + 1 if taken + 1 > a_free else a_free
                        slot_free = start
                        first = a_last if a_last > start + 1 else start + 1
                        first_take = first + 1
                        if closed:
                            if loaded + 1 > first_take:
                                first_take = loaded + 1
                            newest = first_take
                        a_free = first
                        a_last = first_take
                    closed = True
                    activated = newest
                    first = w_last if w_last > taken + 1 else taken + 1
                    first_take = activated if activated > first + 1 else first + 1
                    w_free = first if rows == 1 else first_take + rows - 2
                    loaded = w_last = first_take + rows - 1
                    pending = True
                    raw = loaded
                    key = 1
                else:  # COMPUTE.OS
                    m = args[index]
                    k = ks[index]
                    if loader_free > ready_from:
                        ready_from = loader_free
                    taken = loader_free if loader_free > earliest else earliest
                    load_start = taken + 1
                    # Per chunk: its m rows are read from max(its bank's free cycle, the
                    # previous read + 1) (load_start is then the cycle after the last read);
                    # its first column issues at max(last read + 2, T_prev), and it takes
                    # `width` columns (dim, the last chunk k - (chunks - 1) * dim).
                    last_chunk = (k - 1) // dim
                    for chunk in range(last_chunk + 1):
                        if chunks & 1:
                            load_start = (bank1 if bank1 > load_start else load_start) + m
                            if beat_taken <= load_start:
                                beat_taken = load_start + 1
                            beat_taken += dim if chunk < last_chunk else k - chunk * dim
                            bank1 = beat_taken - 1
                        else:
                            load_start = (bank0 if bank0 > load_start else load_start) + m
                            if beat_taken <= load_start:
                                beat_taken = load_start + 1
                            beat_taken += dim if chunk < last_chunk else k - chunk * dim
                            bank0 = beat_taken - 1
                        chunks += 1
                    loader_free = load_start - 1
                    final = tile_end + rows if tile_end + rows > beat_taken else beat_taken
                    beat_taken = tile_end = final
                    raw = final + os_drain
                    key = 0
                last_taken = issue = taken
                raw_of[index] = raw
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
                    item = [raw, key, index, 0, 0]
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
            elif unit == LD:
                ready_from = free_ld
                issue = free_ld if free_ld > clear else clear
                cost = args[index]
                free_ld = issue + (cost if cost > 2 else 2)
                complete = issue + cost + latency
            else:
                ready_from = free_st
                issue = free_st if free_st > clear else clear
                complete = issue + args[index]
                free_st = complete + 1
            if clear > head:
                stalled = clear - (ready_from if ready_from > head else head)
                if stalled > 0:
                    hazard_stall[unit] += stalled
            queue.append(issue)
            flight = [complete, unit, index, mask]
            flights[unit].append(flight)
            flying += 1
            if unit == EX:
                flight_of[index] = flight
                if len(flight_of) > flight_limit:
                    flight_of = {e[2]: e for e in flights[EX]}
            accepts[index] = accept
            issues[index] = issue
            completes[index] = complete
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
                (accept, dispatch_stall, hazard_stall, recent, free_ld, free_st, flights,
                 window, window_last, read, execute_state, saved) = checkpoints[back]
                (last_taken, w_free, w_last, loaded, activated, a_free, a_last, newest,
                 slot_free, closed, pending, loader_free, bank0, bank1, beat_taken, tile_end,
                 chunks) = execute_state
                checkpoints = {k: v for k, v in checkpoints.items() if k < back}
                hazard_stall = list(hazard_stall)
                recent = [deque(q, depth) for q in recent]
                flights = [list(lst) for lst in flights]
                others = ((flights[1], flights[2]), (flights[0], flights[2]),
                          (flights[0], flights[1]))
                flying = len(flights[0]) + len(flights[1]) + len(flights[2])
                window = [list(e) for e in window]
                read = dict(read)
                raw_of[back:index + 1] = [None] * (index + 1 - back)
                for j, cycle in saved.items():
                    completes[j] = cycle
                for e in flights[EX]:  # (entries are shared with the checkpoint)
                    e[0] = completes[e[2]]
                flight_of = {e[2]: e for e in flights[EX]}
                open_ex = {e[2] for e in window}
                index = next_checkpoint = back
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
                    item = [cycle, 1 if kinds[j] == K_PRELOAD else 0, j, 0, 1]
                    position = bisect.bisect(window, item)
                    window.insert(position, item)
                    open_ex.add(j)
                    stale = remerge(position, stale, new=True)
        if not _merge_agrees(raw_of, kinds, completes):
            raise RuntimeError("the EXECUTE completion merge was not resolved")  # pragma: no cover
        halt = max(accept + 1, max(completes[:n], default=0) + 1)
        accepts[n] = issues[n] = completes[n] = halt
        counters = {
            "cycles": halt,
            "instructions": n + 1,
            "dispatch_stall": dispatch_stall,
        }
        busy = _union_lengths(units, issues, completes, n)
        for u, name in enumerate(_UNIT_NAMES):
            counters[f"unit_busy_{name}"] = busy[u]
        for u, name in enumerate(_UNIT_NAMES):
            counters[f"hazard_stall_{name}"] = hazard_stall[u]
        return ProgramTiming(tuple(accepts), tuple(issues), tuple(completes), halt, counters,
                             rollbacks)
