"""The "model" backend: golden-model values with the analytic cycle model's times.

`run_model(program, memory)` executes the program on the golden machine (bit-exact, program
order: its C engine `systolic.sim.golden.native_machine`, or `systolic.sim.golden.machine.Machine`
without a C compiler) for the memory image, and times it with
`systolic.sim.timing.program_model.ProgramModel`, which gives the same accept, issue and
complete cycles, total cycles and counters as the RTL (`backend="rtl"`), without simulating
cycles: fast enough for whole networks. Both read the program's instruction words
(`Program.words`). Its energy events are the model's (`systolic.sim.energy.events`, summed
class by class by `event_sums.group_event_sums` when first read: `ModelEvents`), equal to the
RTL's event counters.
"""

from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from systolic.errors import SimulationError
from systolic.isa.disassembler import format_instruction
from systolic.isa.program import Program
from systolic.sim.energy.event_sums import group_event_sums
from systolic.sim.golden.machine import Machine
from systolic.sim.golden.native_machine import run_native
from systolic.sim.result import UNIT_NAMES, RunResult, TimesTable
from systolic.sim.timing.program_model import ProgramModel, ProgramTiming

__all__ = ["ModelEvents", "run_golden", "run_model"]


def run_model(program: Program, memory: bytes | bytearray, *, watchdog: int | None = None,
              vcd: str | Path | None = None) -> RunResult:
    """Run `program` from the external memory image `memory` (not modified) to HALT.

    Like the RTL backend, raises SimulationError when HALT would not be accepted by cycle
    `watchdog` - 1, naming the last instruction issued before and the cycle. `vcd` is ignored
    (the model has no waveforms).
    """
    if watchdog is not None and watchdog < 1:
        raise ValueError(f"watchdog must be a positive number of cycles, not {watchdog!r}")
    timing = ProgramModel(program.config).run(program.instructions, words=program.words)
    if watchdog is not None and timing.total_cycles >= watchdog:
        raise SimulationError(_hang_message(program, timing, watchdog))
    image = bytearray(memory)
    run_golden(program, np.frombuffer(image, dtype=np.uint8))
    times = TimesTable(timing.accept, timing.issue, timing.complete)
    return RunResult(memory=image, total_cycles=timing.total_cycles, times=times,
                     counters=dict(timing.counters), events=ModelEvents(program))


class ModelEvents(Mapping[str, int]):
    """The cycle model's energy event counts of `program` (every name of `EVENTS`), summed
    when first read: a whole-network run that never reads them does not pay for them."""

    def __init__(self, program: Program) -> None:
        self._program = program
        self._counts: dict[str, int] | None = None

    def _sums(self) -> dict[str, int]:
        if self._counts is None:
            instructions = self._program.instructions
            whole = np.zeros(len(instructions), dtype=np.int64)  # one group: the whole run
            (events,) = group_event_sums(instructions, self._program.config, whole, 1)
            self._counts = {name: int(count) for name, count in events.items()}
        return self._counts

    def __getitem__(self, name: str) -> int:
        return self._sums()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sums())

    def __len__(self) -> int:
        return len(self._sums())


def run_golden(program: Program, memory: np.ndarray) -> None:
    """Run `program` to HALT on `memory` (a writeable uint8 array, changed in place) with
    the golden machine: its C engine, or the Python `Machine` when that is unavailable."""
    words, instructions = program.words, program.instructions
    if not run_native(program.config, words, memory, instructions=instructions):
        machine = Machine(program.config, 0)
        machine.memory = memory  # (the machine works on `memory` in place)
        machine.run(instructions)


def _hang_message(program: Program, timing: ProgramTiming, limit: int) -> str:
    """Return the RTL driver's watchdog message for a run stopped after cycle `limit` - 1."""
    issued = [(cycle, UNIT_NAMES.index(program.instructions[index].UNIT.value.lower()), index)
              for index, cycle in enumerate(timing.issue[:-1]) if cycle < limit]
    if issued:  # the latest issue; in one cycle, the highest unit's (as the trace is read)
        cycle, _, index = max(issued)
        text = format_instruction(program.instructions[index])
        last = f"the last instruction issued was {index} ({text}) in cycle {cycle}"
    else:
        last = "no instruction was issued"
    accepted = sum(cycle < limit for cycle in timing.accept)
    waiting = sum(cycle >= limit for cycle in timing.complete)
    return (
        f"the program did not finish within {limit} cycles: {last}; {accepted} of "
        f"{len(timing.accept)} instructions accepted, {waiting} not completed; raise the "
        f"watchdog if the program is just long"
    )
