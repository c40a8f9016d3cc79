"""Cycle-exact timing of the EXECUTE unit (`systolic.hdl.execute_unit.ExecuteUnit`).

`ExecuteTiming(config).issue(instr, available)` takes the unit's instructions in program order,
each offered from cycle `available`, and returns the cycle in which the unit takes it and the
cycle in which it reports completion. Cycles count from reset (cycle 0 is the first clock edge
after reset); the accumulator is assumed always ready (as `hdl/accumulator.py` is). The model
is closed form per instruction: it keeps, for each of the unit's two engines, when it is free
and when its last beat was taken, and for the array the cycles in which weight tiles finished
loading and were activated (docs/hardware.md, "EXECUTE unit").

Weight-stationary, with `L = rows + cols - 1` (the array's latency):

- An *item* of the activation engine (a COMPUTE of `m` rows, or a one-row dummy) started in
  cycle `s` issues its first row read in `I0 = max(s + 1, T_prev)` (`T_prev`: the cycle the
  previous item's last row was taken) and that row is taken in `T0 = max(I0 + 1, gate)`, where
  `gate = D + 1` when the row activates new weights (`D`: the cycle the last row of those
  weights was taken) and nothing otherwise; row `i` is taken in `T0 + i`. The engine is free
  from `I_last + 1`, `I_last = I0` if `m == 1` else `T0 + m - 2`.
- A weight tile (PRELOAD, `rows` beats) started in `s` issues in `I0 = max(s + 1, Tw_prev)`,
  its first beat is taken in `T0 = max(I0 + 1, F)` (`F`: the cycle the previous weight tile was
  activated), the last in `D = T0 + rows - 1`; the engine is free from `I_last + 1` as above.
- A PRELOAD is taken in the first cycle `p >= max(available, previous take + 1)` in which the
  weight engine is free and, if the previous PRELOAD has not been used by a COMPUTE yet, the
  activation engine is free too. If the activation engine is busy then, its item's last row
  closes the array tile; otherwise a dummy item starts in `p` (it activates the unused weights
  if any). PRELOAD completes in `D`.
- A COMPUTE is taken in the first cycle `c >= max(available, previous take + 1)` in which the
  activation engine is free; it starts an item in `c` whose first row activates the newest
  weights if the previous item closed the tile. It completes in `T0 + m - 1 + L`.
- After reset the weight engine loads a zero tile (started in cycle -1) and the activation
  engine runs a dummy item (started in -1, activating it), so the unit can take its first
  instructions from cycle 0, with the first real weights loaded no earlier than cycle
  `rows + 1`.

Back to back: PRELOAD of the next tile is taken while the current COMPUTE streams and its weights
load behind the current tile's first row, so `PRELOAD, COMPUTE, PRELOAD, COMPUTE, ...` keeps the
array busy every cycle when `m >= rows` and instructions are offered in time.
"""

import dataclasses

from systolic.config import ArrayConfig, Dataflow

from ..isa.instructions import Compute, ComputeOS, Instruction, Preload

__all__ = ["ExecuteTiming", "InstructionTiming"]

_NEVER = -(10**9)


@dataclasses.dataclass(frozen=True)
class InstructionTiming:
    """The cycle the unit took an instruction in, and the cycle it reported completion in."""

    taken: int
    completed: int


@dataclasses.dataclass
class _Engine:
    """An engine that issues one read per cycle into a one-entry output stage."""

    free: int  # first cycle in which a new item may start: when the last read issues
    last_take: int  # cycle in which the previous item's last beat was taken

    def run(self, start: int, beats: int, gate: int) -> int:
        """Run an item started in `start` whose first beat waits for `gate`; return its T0."""
        first_issue = max(start + 1, self.last_take)
        first_take = max(first_issue + 1, gate)
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
        if config.dataflow is Dataflow.WS:
            self._init_ws()
        else:
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
        """Take the unit's next instruction, offered from cycle `available`; return its timing."""
        earliest = max(available, self._last_taken + 1)
        if isinstance(instr, Preload) and self.config.dataflow is Dataflow.WS:
            timing = self._preload(earliest)
        elif isinstance(instr, Compute) and self.config.dataflow is Dataflow.WS:
            timing = self._compute(earliest, instr.m)
        elif isinstance(instr, ComputeOS) and self.config.dataflow is Dataflow.OS:
            timing = self._compute_os(earliest, instr)
        else:
            raise ValueError(
                f"{instr.MNEMONIC} is not an EXECUTE instruction of a "
                f"{self.config.dataflow.value} array")
        self._last_taken = timing.taken
        return timing

    def _start_item(self, taken: int, beats: int) -> int:
        """Queue an activation item taken in `taken`; return the cycle its first row is taken."""
        activates = self._closed
        start = max(taken + 1, self._acts.free)  # it moves from the waiting slot to the engine
        self._slot_free = start
        first = self._acts.run(start, beats, self._loaded + 1 if activates else _NEVER)
        if activates:
            self._newest_activated = first
        return first

    def _preload(self, earliest: int) -> InstructionTiming:
        taken = max(earliest, self._weights.free)
        if self._pending:
            taken = max(taken, self._slot_free)
        if self._pending or taken > self._acts.free:
            self._start_item(taken, 1)  # dummy: closes the tile (and activates unused weights)
        self._closed = True  # the running item's (or the dummy's) last row closes the tile
        self._activated = self._newest_activated
        first = self._weights.run(taken, self.config.rows, self._activated)
        self._loaded = first + self.config.rows - 1
        self._pending = True
        return InstructionTiming(taken, self._loaded)

    def _compute(self, earliest: int, m: int) -> InstructionTiming:
        taken = max(earliest, self._slot_free)
        first = self._start_item(taken, m)
        self._closed = False
        self._pending = False
        return InstructionTiming(taken, first + m - 1 + self._latency)

    def _compute_os(self, earliest: int, instr: ComputeOS) -> InstructionTiming:
        rows, dim = self.config.rows, self.config.dim
        taken = max(earliest, self._loader_free)
        load_start = taken + 1
        issue = _NEVER
        for chunk in range(instr.chunks(self.config)):
            width = min(dim, instr.k - chunk * dim)
            bank = self._chunks % 2
            self._chunks += 1
            first_read = max(load_start, self._bank_free[bank])
            last_read = first_read + instr.m - 1
            load_start = last_read + 1
            issue = max(last_read + 2, self._beat_taken)  # first column
            last_issue = issue + width - 1
            self._bank_free[bank] = last_issue
            self._beat_taken = last_issue + 1
        self._loader_free = load_start - 1
        final = max(self._beat_taken, self._tile_end + rows)
        self._beat_taken = self._tile_end = final
        return InstructionTiming(taken, final + 2 * rows + self.config.cols - 1)
