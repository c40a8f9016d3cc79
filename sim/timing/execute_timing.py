"""Cycle-exact timing of the EXECUTE unit (`systolic.hdl.execute_unit.ExecuteUnit`).

`ExecuteTiming(config).issue(instr, available)` takes the unit's instructions in program order,
each offered from cycle `available`, and returns the cycle in which the unit takes it and the
cycle in which it reports completion. Cycles count from reset (cycle 0 is the first clock edge
after reset); the accumulator is assumed always ready (as `hdl/accumulator.py` is). The model
is closed form per instruction: it keeps, for each of the unit's two engines, when it is free
and when its last beat was taken, and for the array the cycles in which weight tiles finished
loading and were activated (docs/hardware.md, "EXECUTE unit").

Weight-stationary, with `L = rows + cols - 1` (the array's latency). Each engine issues one
memory read per cycle into a one-entry stage that the array takes from; it can take new work in
the cycle it issues its current item's last read (`I_last`).

- Activation items (a COMPUTE of `m` rows, or a one-row dummy) wait in a one-item slot. An item
  taken in cycle `c` moves to the engine in `s = max(c + 1, I_last of the item before)`, the slot
  takes the next item from `s` on. Its first row read issues in `I0 = max(s + 1, T_prev)`
  (`T_prev`: the cycle the previous item's last row was taken) and is taken in
  `T0 = max(I0 + 1, gate)`, where `gate = D + 1` when the row activates new weights (`D`: the
  cycle the last row of those weights was taken), else none; row `i` is taken in `T0 + i`.
  `I_last = I0` if `m == 1` else `T0 + m - 2`.
- A weight tile (PRELOAD, or the zero tile after reset; `rows` beats) started in `s` issues in
  `I0 = max(s + 1, Tw_prev)`, its first beat is taken in `T0 = max(I0 + 1, F)` (`F`: the cycle the
  previous weight tile was activated), the last in `D = T0 + rows - 1`.
- A PRELOAD is taken in the first cycle `p >= max(available, previous take + 1)` in which the
  weight engine is free (`p >= I_last` of the previous tile) and, if the previous PRELOAD has not
  been used by a COMPUTE yet, the slot is free. If the newest activation item has not issued its
  last row before `p` (and no PRELOAD is unused), that row closes the array tile; otherwise a
  dummy item taken in `p` closes it (activating the unused weights, if any). It completes in `D`.
- A COMPUTE is taken in the first cycle `c >= max(available, previous take + 1)` in which the slot
  is free; its first row activates the newest weights if the item before closed the tile. It
  completes in `T0 + m - 1 + L`.
- After reset the weight engine loads a zero tile and the activation engine runs a dummy row
  that activates it (both started in cycle -1), so the first PRELOAD is taken no earlier than
  cycle `rows - 1` and its weights are taken from cycle `rows + 1`.

Back to back: a COMPUTE is taken while the previous one streams, the next PRELOAD right after it,
and its weights load behind the current tile's first row, so `PRELOAD, COMPUTE, PRELOAD, ...`
keeps the array busy every cycle when every `m >= rows` and instructions are offered in time;
COMPUTEs without PRELOAD between them follow each other with no idle cycle for any `m`.

Output-stationary (`rows` x `cols`, `dim = max(rows, cols)`): a COMPUTE.OS of `ceil(k / dim)`
chunks is taken in the first cycle `>= max(available, previous take + 1)` in which the loader
issues its previous instruction's last read (or is idle). Chunk `g` (counting over all
instructions; it uses bank `g mod 2`) reads its `m` rows in consecutive cycles from
`max(previous read + 1, B)` (`taken + 1` for an instruction's first chunk), where `B` is the
cycle the streamer issued the last column of chunk `g - 2`; its first column issues in
`max(last read + 2, T_prev)` (`T_prev`: the cycle the streamer's previous column was taken), the
others in the following cycles, each taken one cycle after its issue, except that a tile's last
column is taken no earlier than `rows` cycles after the previous tile's last column. The tile
completes `2 * rows + cols - 1` cycles after its last column is taken (row 0 of the array's
drain). Back to back, tiles follow with no idle cycle when every chunk has at least `m` columns:
a tile of `k` steps then occupies the array for `max(k, rows)` cycles.

Both dataflows (`Dataflow.BOTH`): the unit keeps both schedules above and a mode, weight-
stationary after reset (the zero tile). An instruction of the other family is taken no
earlier than the cycle after the current family has drained its array: for COMPUTE.OS after
weight-stationary work, `max(D + 1, T_last + L + 1)` (`D`: the newest weight tile's last
beat; `T_last`: the newest activation item's last row, dummies included); for PRELOAD or
COMPUTE after COMPUTE.OS, the cycle after the last tile's completion. The mode switches when
it is taken; each schedule otherwise continues from its own state.
"""

import dataclasses
from typing import NamedTuple

from systolic.config import ArrayConfig
from systolic.isa.instructions import Compute, ComputeOS, Instruction, Preload

__all__ = ["ExecuteState", "ExecuteTiming", "InstructionTiming"]

_NEVER = -(10**9)


class InstructionTiming(NamedTuple):
    """The cycle the unit took an instruction in, and the cycle it reported completion in."""

    taken: int
    completed: int


class ExecuteState(NamedTuple):
    """The schedule's state in numbers, in the order of the C port's `Execute` record.

    Weight-stationary: the weight and activation engines (`free`, `last_take`), the cycles
    the newest weight tile was loaded in (D) and the one before activated in (F), the newest
    activation, the slot's free cycle, and `closed`/`pending` as 0 or 1. Output-stationary:
    the loader's free cycle, each bank's free cycle, the streamer's last column, the last tile
    end and the chunk count. The other dataflow's fields are 0. Both dataflows: `both` 1 and
    `mode_os` the current mode (0 weight-stationary, 1 output-stationary); else both 0.
    """

    last_taken: int
    weights_free: int
    weights_last_take: int
    loaded: int
    activated: int
    acts_free: int
    acts_last_take: int
    newest_activated: int
    slot_free: int
    closed: int
    pending: int
    loader_free: int
    bank0_free: int
    bank1_free: int
    beat_taken: int
    tile_end: int
    chunks: int
    both: int = 0
    mode_os: int = 0


@dataclasses.dataclass(slots=True)
class _Engine:
    """An engine that issues one read per cycle into a one-entry output stage."""

    free: int  # first cycle in which a new item may start: when the last read issues
    last_take: int  # cycle in which the previous item's last beat was taken

    def run(self, start: int, beats: int, gate: int) -> int:
        """Run an item started in `start` whose first beat waits for `gate`; return its T0."""
        first_issue = max(self.last_take, start + 1)
        first_take = max(gate, first_issue + 1)
        last_issue = first_issue if beats == 1 else first_take + beats - 2
        self.free = last_issue
        self.last_take = first_take + beats - 1
        return first_take


class ExecuteTiming:
    """The EXECUTE unit's schedule over one instruction sequence (see the module docstring)."""

    def __init__(self, config: ArrayConfig) -> None:
        self.config = config
        self._latency = config.rows + config.cols - 1
        self._last_taken = -1
        self._ws = config.dataflow.weight_stationary  # runs PRELOAD and COMPUTE
        self._os = config.dataflow.output_stationary  # runs COMPUTE.OS
        self._mode_os = not self._ws  # the family the array runs now (BOTH: WS after reset)
        self._rows, self._dim = config.rows, config.dim
        self._os_drain = 2 * config.rows + config.cols - 1
        if self._ws:
            self._init_ws()
        if self._os:
            self._loader_free = _NEVER  # cycle the loader issues its instruction's last read
            self._bank_free = [_NEVER, _NEVER]  # first cycle the loader may fill each bank
            self._chunks = 0  # chunks loaded so far (chunk g uses bank g % 2)
            self._beat_taken = _NEVER  # cycle the streamer's previous column was taken
            self._tile_end = _NEVER  # cycle the previous tile's final column was taken

    def _init_ws(self) -> None:
        rows = self.config.rows
        self._weights = _Engine(free=0, last_take=_NEVER)
        zero_first = self._weights.run(-1, rows, _NEVER)
        self._loaded = zero_first + rows - 1  # D of the newest weight tile
        self._activated = _NEVER  # F of the tile before the newest (gate for the next tile)
        self._acts = _Engine(free=0, last_take=_NEVER)
        self._newest_activated = self._acts.run(-1, 1, self._loaded + 1)
        self._slot_free = -1  # first cycle the activation engine's waiting slot takes an item
        self._closed = False  # the activation engine's last item closes the array tile
        self._pending = False  # the newest weight tile has not been used by a COMPUTE

    def issue(self, instr: Instruction, available: int) -> InstructionTiming:
        """Take the unit's next instruction, offered from cycle `available`; return its timing.

        Raises ValueError for an instruction the unit does not execute in this dataflow."""
        if isinstance(instr, Preload) and self._ws:
            return self.preload(available)
        if isinstance(instr, Compute) and self._ws:
            return self.compute(available, instr.m)
        if isinstance(instr, ComputeOS) and self._os:
            return self.compute_os(available, instr.m, instr.k)
        raise ValueError(
            f"{instr.MNEMONIC} is not an EXECUTE instruction of a "
            f"{self.config.dataflow.value} array")

    def copy(self) -> "ExecuteTiming":
        """Return an independent copy of the schedule so far (a checkpoint)."""
        clone = object.__new__(ExecuteTiming)
        clone.__dict__.update(self.__dict__)
        if self._ws:
            clone._weights = _Engine(self._weights.free, self._weights.last_take)
            clone._acts = _Engine(self._acts.free, self._acts.last_take)
        if self._os:
            clone._bank_free = list(self._bank_free)
        return clone

    def state(self) -> ExecuteState:
        """Return the schedule's state (see `ExecuteState`)."""
        ws: tuple[int, ...] = (0,) * 10
        os: tuple[int, ...] = (0,) * 6
        if self._ws:
            weights, acts = self._weights, self._acts
            ws = (weights.free, weights.last_take, self._loaded, self._activated, acts.free,
                  acts.last_take, self._newest_activated, self._slot_free, int(self._closed),
                  int(self._pending))
        if self._os:
            os = (self._loader_free, *self._bank_free, self._beat_taken, self._tile_end,
                  self._chunks)
        both = self._ws and self._os
        return ExecuteState._make(
            (self._last_taken, *ws, *os, int(both), int(both and self._mode_os)))

    def _switch_gate(self, to_os: bool) -> int:
        """Return the first cycle an instruction of the family `to_os` may be taken in because
        of a change of dataflow (a very early cycle when the array already runs it)."""
        if to_os == self._mode_os:
            return _NEVER
        if to_os:  # the weight-stationary engines and the array have drained
            return max(self._weights.last_take + 1, self._acts.last_take + self._latency + 1)
        return self._tile_end + self._os_drain + 1  # the last tile has left the array

    def _enter(self, to_os: bool, available: int) -> int:
        """Switch to the family `to_os` for an instruction offered from `available`; return
        the cycle it is offered from once the array may run it."""
        gate = self._switch_gate(to_os)
        self._mode_os = to_os
        return max(available, gate)

    def ready_from(self, cls: type[Instruction]) -> int:
        """Return the first cycle the unit would take an instruction of class `cls` (PRELOAD,
        COMPUTE or COMPUTE.OS) if it were offered from then on.

        This is the unit's `i_instr.ready` for it (it stays high once it rises, until the
        unit takes an instruction); the state is not changed.
        """
        earliest = max(self._last_taken + 1, self._switch_gate(issubclass(cls, ComputeOS)))
        if issubclass(cls, ComputeOS):
            return max(earliest, self._loader_free)
        if issubclass(cls, Preload):
            ready = max(earliest, self._weights.free)
            return max(ready, self._slot_free) if self._pending else ready
        return max(earliest, self._slot_free)

    def preload(self, available: int) -> InstructionTiming:
        """Take a PRELOAD (weight-stationary) offered from cycle `available`."""
        available = self._enter(False, available)
        taken = max(self._weights.free, self._last_taken + 1, available)
        if self._pending and self._slot_free > taken:
            taken = self._slot_free
        if self._pending or taken > self._acts.free:
            self._start_item(taken, 1)  # dummy: closes the tile (and activates unused weights)
        self._closed = True  # the running item's (or the dummy's) last row closes the tile
        self._activated = self._newest_activated
        first = self._weights.run(taken, self._rows, self._activated)
        self._loaded = first + self._rows - 1
        self._pending = True
        return self._took(taken, self._loaded)

    def compute(self, available: int, m: int) -> InstructionTiming:
        """Take a COMPUTE of `m` rows (weight-stationary) offered from cycle `available`."""
        available = self._enter(False, available)
        taken = max(self._slot_free, self._last_taken + 1, available)
        first = self._start_item(taken, m)
        self._closed = False
        self._pending = False
        return self._took(taken, first + m - 1 + self._latency)

    def compute_os(self, available: int, m: int, k: int) -> InstructionTiming:
        """Take a COMPUTE.OS of `m` rows and `k` steps offered from cycle `available`."""
        available = self._enter(True, available)
        taken = max(self._loader_free, self._last_taken + 1, available)
        load_start = taken + 1
        for chunk in range(-(-k // self._dim)):
            width = min(k - chunk * self._dim, self._dim)
            bank = self._chunks % 2
            self._chunks += 1
            first_read = max(self._bank_free[bank], load_start)
            last_read = first_read + m - 1
            load_start = last_read + 1
            issue = max(self._beat_taken, last_read + 2)  # first column
            self._bank_free[bank] = issue + width - 1
            self._beat_taken = issue + width
        self._loader_free = load_start - 1
        final = max(self._tile_end + self._rows, self._beat_taken)
        self._beat_taken = self._tile_end = final
        return self._took(taken, final + self._os_drain)

    def _took(self, taken: int, completed: int) -> InstructionTiming:
        self._last_taken = taken
        return InstructionTiming(taken, completed)

    def _start_item(self, taken: int, beats: int) -> int:
        """Queue an activation item taken in `taken`; return the cycle its first row is taken."""
        activates = self._closed
        start = taken + 1  # it moves from the waiting slot to the engine
        start = max(start, self._acts.free)
        self._slot_free = start
        first = self._acts.run(start, beats, self._loaded + 1 if activates else _NEVER)
        if activates:
            self._newest_activated = first
        return first
