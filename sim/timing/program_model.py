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
  its mask clears in v = max(h, accept + 3, completion + 1 of every older conflicting
  instruction of another unit that is still in flight after its acceptance cycle) (the mask
  is compared in the cycle after acceptance and recorded in the next); the unit takes it in the
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

Each rule lives in its model, and this module only composes them, one instruction after the
other (`_Pass`): `dispatch_model.DispatchState` (accept, queue head, mask clear, stall
counters), `dispatch_model.UnitModel` with `load_timing.beats_timing` and
`store_timing.duration_timing` (the LOAD and STORE units), `execute_timing.ExecuteTiming`
(the EXECUTE unit), `completion_merge.CompletionMerge` (the merge window) and
`program_timing.busy_cycles` (unit_busy). The static facts of every instruction (unit,
conflict masks and row spans, LOAD beats, STORE-unit durations) come from
`program_facts.ProgramFacts` (numpy, class by class). This Python pass is the specification:
`run` uses its port to C (`native_pass`, `sim/native/timing.c`, tested equal on random
programs and every test model) when the native library is available and `native` is not
False, and the Python pass otherwise.
"""

import dataclasses
import functools
import gc
from collections.abc import Sequence

import numpy as np

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Compute, ComputeOS, Halt, Instruction, Preload
from systolic.sim.timing.completion_merge import CompletionMerge, Stale, earlier, exact_deliveries
from systolic.sim.timing.dispatch_model import DispatchState, UnitModel, hazard_stall
from systolic.sim.timing.execute_timing import ExecuteTiming
from systolic.sim.timing.load_timing import beats_timing
from systolic.sim.timing.native_pass import native_pass
from systolic.sim.timing.program_facts import (
    EX,
    K_COMPUTE,
    K_COMPUTE_OS,
    K_PRELOAD,
    LD,
    Describer,
    ProgramFacts,
)
from systolic.sim.timing.program_timing import (
    COUNTER_NAMES,
    UNIT_NAMES,
    ProgramTiming,
    busy_cycles,
)
from systolic.sim.timing.store_timing import duration_timing

__all__ = ["COUNTER_NAMES", "QUEUE_DEPTH", "TABLE_ENTRIES", "ProgramModel", "ProgramTiming"]

TABLE_ENTRIES = 16
"""In-flight table entries of the accelerator's dispatcher."""
QUEUE_DEPTH = 4
"""Per-unit queue entries of the accelerator's dispatcher."""
FIRST_ACCEPT = 1
"""The first cycle a command can be accepted in (`busy` rises the cycle after `start`)."""

CHECKPOINT_EVERY = 128  # (rollbacks are rare: a checkpoint costs more than a replay)
CHECKPOINTS_KEPT = 16
MAX_ROLLBACKS = 10**6
_EXECUTE_CLASS = {K_COMPUTE: Compute, K_PRELOAD: Preload, K_COMPUTE_OS: ComputeOS}


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
        self.describer = Describer(config)

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
        # The run allocates some million objects that hold no reference cycles: the cyclic
        # collector's passes over them (and the program) would double its time.
        collecting = gc.isenabled()
        gc.disable()
        try:
            facts = ProgramFacts(self.describer, body, self.config.dataflow is Dataflow.WS,
                                 words=None if words is None else words[:-1])
            if self.native:
                timing = native_pass(self.config, self.table_entries, self.queue_depth, facts)
                if timing is not None:
                    return timing
            return self.python_pass(facts)
        finally:
            if collecting:
                gc.enable()

    def python_pass(self, facts: ProgramFacts) -> ProgramTiming:
        """Return the timing of the program described by `facts` (HALT excluded) from the
        Python specification. Raises RuntimeError if the completion merge does not settle
        within `MAX_ROLLBACKS` returns to a checkpoint."""
        return _Pass(self, facts).run()


@dataclasses.dataclass
class _Units:
    """The state of the dispatcher and of every unit after some instructions (a checkpoint)."""

    dispatch: DispatchState
    load: UnitModel
    execute: ExecuteTiming
    store: UnitModel
    merge: CompletionMerge

    def copy(self) -> "_Units":
        return _Units(self.dispatch.copy(), self.load.copy(), self.execute.copy(),
                      self.store.copy(), self.merge.copy())


class _Pass:
    """One timing of a program: its instructions in program order, with a return to a
    checkpoint whenever the completion merge moves a delivery that an instruction used.

    `strobes[i]` is EXECUTE instruction i's completion strobe in this attempt (None until
    timed); `announced[i]` its strobe known from an earlier attempt, exact before the cycle
    of the moved delivery that caused the return.
    """

    def __init__(self, model: ProgramModel, facts: ProgramFacts) -> None:
        self.config = model.config
        self.facts = facts
        n = len(facts.kinds)
        self.accepts, self.issues, self.completes = ([0] * (n + 1) for _ in range(3))
        self.strobes: list[int | None] = [None] * n
        self.announced: dict[int, int] = {}
        self.checkpoints: dict[int, _Units] = {}
        self.next_checkpoint = 0
        self.rollbacks = 0
        self.state = _Units(
            DispatchState(self.completes, table_entries=model.table_entries,
                          queue_depth=model.queue_depth, first_accept=FIRST_ACCEPT),
            UnitModel(), ExecuteTiming(model.config), UnitModel(),
            CompletionMerge(self.completes))

    def run(self) -> ProgramTiming:
        """Time every instruction, then HALT; return the timing."""
        index, n = 0, len(self.strobes)
        while index < n:
            if index == self.next_checkpoint:
                self._checkpoint(index)
            stale = self._time(index)
            index = index + 1 if stale is None else self._roll_back(index, stale)
        return self._result()

    def _checkpoint(self, index: int) -> None:
        """Save the state before instruction `index`, keeping the first and latest ones."""
        self.next_checkpoint += CHECKPOINT_EVERY
        self.checkpoints[index] = self.state.copy()
        if len(self.checkpoints) > CHECKPOINTS_KEPT:
            keys = iter(self.checkpoints)  # (ascending)
            first = next(keys)
            del self.checkpoints[first if first else next(keys)]

    def _time(self, index: int) -> Stale | None:
        """Accept, issue and complete instruction `index`; return the stale delivery its
        completion strobe caused in the merge, if any."""
        state, unit = self.state, self.facts.units[index]
        dispatch = state.dispatch
        accept, full_table = dispatch.accept(unit)
        head = dispatch.head(unit, accept)
        clear, waited = dispatch.mask_clear(unit, accept, head,
                                            functools.partial(self.facts.conflict, index))
        for owner in (*full_table, *waited):
            state.merge.use(owner, index)
        stale = None
        if unit == EX:
            ready, issue, complete, stale = self._execute(index, accept, clear)
        else:
            ready, issue, complete = self._load_or_store(index, unit, clear)
        dispatch.record(unit, index, issue, stalled=hazard_stall(head, clear, ready))
        self.accepts[index], self.issues[index], self.completes[index] = accept, issue, complete
        return stale

    def _load_or_store(self, index: int, unit: int, clear: int) -> tuple[int, int, int]:
        """Return the cycle the LOAD or STORE unit is ready from, and the issue and
        completion of instruction `index`, whose mask clears in `clear`."""
        cost = self.facts.args[index]
        if unit == LD:
            engine, timing = self.state.load, beats_timing(cost, self.config.mem_latency)
        else:
            engine, timing = self.state.store, duration_timing(cost)
        ready = engine.free_from
        issue = max(clear, ready)
        return ready, issue, engine.issue(issue, timing)

    def _execute(self, index: int, accept: int, clear: int
                 ) -> tuple[int, int, int, Stale | None]:
        """Return the cycle the EXECUTE unit is ready from, the issue and the merged
        completion of instruction `index` (accepted in `accept`, its mask clear in `clear`),
        and the stale delivery its strobe caused."""
        execute, facts = self.state.execute, self.facts
        kind = facts.kinds[index]
        ready = execute.ready_from(_EXECUTE_CLASS[kind])
        if kind == K_PRELOAD:
            timing = execute.preload(clear)
        elif kind == K_COMPUTE:
            timing = execute.compute(clear, facts.args[index])
        else:
            timing = execute.compute_os(clear, facts.args[index], facts.ks[index])
        strobe = self.strobes[index] = timing.completed
        if index in self.announced:
            self.announced[index] = strobe
        merge = self.state.merge
        merge.close_before(accept)
        complete, stale = merge.deliver(index, strobe, int(kind == K_PRELOAD))
        return ready, timing.taken, complete, stale

    def _roll_back(self, index: int, stale: Stale) -> int:
        """Return to the checkpoint before the reader of the stale delivery, knowing the
        strobes timed before its cycle (every event before it was exact); return the index
        of the instruction to time next."""
        pending: Stale | None = stale
        while pending is not None:
            self.rollbacks += 1
            if self.rollbacks > MAX_ROLLBACKS:
                raise RuntimeError("the EXECUTE completion merge did not settle")
            reader, horizon = pending
            for j in range(reader + 1, index + 1):
                cycle = self.strobes[j]
                if cycle is not None and cycle < horizon:
                    self.announced[j] = cycle
            back = max(k for k in self.checkpoints if k <= reader)
            self.state = self.checkpoints[back]
            self.checkpoints = {k: v for k, v in self.checkpoints.items() if k < back}
            self.strobes[back:index + 1] = [None] * (index + 1 - back)
            self.state.merge.write_back()
            index = self.next_checkpoint = back
            pending = None
            for j, cycle in sorted(self.announced.items()):
                if j >= back:
                    key = int(self.facts.kinds[j] == K_PRELOAD)
                    pending = earlier(pending, self.state.merge.announce(j, cycle, key))
        return index

    def _result(self) -> ProgramTiming:
        """Check the deliveries against the exact merge, time HALT, count; return the timing."""
        facts, n = self.facts, len(self.strobes)
        executes = np.flatnonzero(facts.kind_array >= K_COMPUTE)
        strobes = np.array([self.strobes[i] for i in executes.tolist()], dtype=np.int64)
        keys = (facts.kind_array[executes] == K_PRELOAD).astype(np.int64)
        delivered = np.array(self.completes, dtype=np.int64)[executes]
        if not np.array_equal(exact_deliveries(strobes, keys), delivered):
            raise RuntimeError("the EXECUTE completion merge was not resolved")  # pragma: no cover
        dispatch = self.state.dispatch
        halt = max(dispatch.last_accept + 1, max(self.completes[:n], default=0) + 1)
        self.accepts[n] = self.issues[n] = self.completes[n] = halt
        busy = busy_cycles(facts.units, self.issues[:n], self.completes[:n])
        counters = {"cycles": halt, "instructions": n + 1,
                    "dispatch_stall": dispatch.dispatch_stall}
        counters |= {f"unit_busy_{name}": busy[u] for u, name in enumerate(UNIT_NAMES)}
        counters |= {f"hazard_stall_{name}": dispatch.hazard_stall[u]
                     for u, name in enumerate(UNIT_NAMES)}
        return ProgramTiming(tuple(self.accepts), tuple(self.issues), tuple(self.completes),
                             halt, counters, self.rollbacks)
