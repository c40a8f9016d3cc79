"""The `verilator` simulation backend: a program on the Accelerator's Verilog under Verilator.

`run(program, memory, watchdog=...)` emits the Accelerator for `program.config` with
`systolic.hdl.emit` (the same Verilog the tool ships; `emitted.py` caches the text on
disk), builds it with the C++ harness (once per design; `build.py` caches builds on disk),
streams the program's commands and models the external memory as the `rtl` backend does: the
same cycle numbering, memory contents, counters and per-instruction times (docs:
systolic.sim.result).
"""

import functools
from pathlib import Path

from systolic.config import ArrayConfig
from systolic.errors import SimulationError
from systolic.isa.disassembler import format_instruction
from systolic.isa.instructions import Halt
from systolic.isa.program import Program
from systolic.sim.progress import report_cycle
from systolic.sim.result import UNIT_NAMES, InstructionTimes, RunResult
from systolic.sim.rtl.commands import encode_command
from systolic.sim.rtl.pysim_driver import DEFAULT_WATCHDOG
from systolic.sim.verilator.design import VerilatedDesign
from systolic.sim.verilator.emitted import emitted_accelerator
from systolic.sim.verilator.process import HarnessResult

__all__ = ["accelerator_design", "run"]

UNLIMITED = 1 << 62
"""The cycle limit of a run without a watchdog (its stall limit still applies)."""


@functools.lru_cache(maxsize=16)
def accelerator_design(config: ArrayConfig) -> VerilatedDesign:
    """Return the Accelerator for `config` prepared for Verilator (its Verilog emitted once
    per configuration and HDL sources, cached on disk: `emitted`)."""
    parts, _ = emitted_accelerator(config)
    return VerilatedDesign.from_parts(parts)


EVENT_PREFIX = "events__"
"""The ports of the energy event counters (`events__macs`), reported as `RunResult.events`."""


def _counter_name(port: str) -> str:
    """Map a counter port (`unit_busy__1`) to its `RunResult.counters` key (`unit_busy_ex`)."""
    base, _, unit = port.partition("__")
    return f"{base}_{UNIT_NAMES[int(unit)]}" if unit else base


def _hang_message(program: Program, outcome: HarnessResult, stall_limit: int) -> str:
    """Return the watchdog's message: the last instruction issued and the cycle."""
    if outcome.last_issue < 0:
        last = "no instruction was issued"
    else:
        text = format_instruction(program.instructions[outcome.last_issue])
        last = (f"the last instruction issued was {outcome.last_issue} ({text}) in cycle "
                f"{outcome.last_issue_cycle}")
    waiting = sum(complete < 0 for _, _, complete in outcome.times)
    if outcome.status == "stalled":
        return (
            f"the program made no progress for {stall_limit} cycles (no instruction accepted, "
            f"issued or completed) by cycle {outcome.cycle}: {last}; {outcome.accepted} of "
            f"{len(outcome.times)} instructions accepted, {waiting} not completed"
        )
    return (
        f"the program did not finish within {outcome.cycle} cycles: {last}; "
        f"{outcome.accepted} of {len(outcome.times)} instructions accepted, {waiting} not "
        f"completed; raise the watchdog if the program is just long"
    )


def run(program: Program, memory: bytes | bytearray, *, watchdog: int | None = None,
        vcd: str | Path | None = None) -> RunResult:
    """Run `program` on a copy of `memory` (the whole external image) to HALT; see the module
    docstring. Raises `SimulationError` when Verilator is missing, the build fails, or the run
    hits the watchdog (naming the last instruction issued and the cycle). `vcd` is accepted for
    the backend interface and ignored: this backend writes no waveforms (use "rtl").

    Without a `watchdog` a run may be as long as it needs (whole models take tens of millions
    of cycles) and counts as hung only after `DEFAULT_WATCHDOG` cycles in which no instruction
    was accepted, issued or completed."""
    if watchdog is not None and watchdog < 1:
        raise ValueError(f"watchdog must be a positive number of cycles, not {watchdog!r}")
    limit = UNLIMITED if watchdog is None else watchdog
    stall_limit = DEFAULT_WATCHDOG if watchdog is None else 0
    config = program.config
    design = accelerator_design(config)
    commands = [(encode_command(instr, config), isinstance(instr, Halt))
                for instr in program.instructions]
    outcome = design.run(commands, memory, watchdog=limit, stall_limit=stall_limit,
                         progress=report_cycle)
    if outcome.status == "error":
        raise SimulationError(f"verilator backend: {outcome.message}")
    if outcome.status != "done":
        raise SimulationError(_hang_message(program, outcome, stall_limit))
    for index, times in enumerate(outcome.times):
        if min(times) < 0:
            raise SimulationError(f"instruction {index} finished without a complete trace")
    counters = {_counter_name(name): value for name, value in outcome.ports.items()
                if not name.startswith(EVENT_PREFIX)}
    events = {name.removeprefix(EVENT_PREFIX): value for name, value in outcome.ports.items()
              if name.startswith(EVENT_PREFIX)}
    return RunResult(
        memory=outcome.memory,
        total_cycles=counters["cycles"],
        times=tuple(InstructionTimes(*t) for t in outcome.times),
        counters=counters,
        events=events,
    )
