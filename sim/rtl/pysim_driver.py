"""Run a `Program` on the `Accelerator` RTL in the Amaranth simulator (pysim).

One testbench does everything in each cycle (so the design re-settles as rarely as possible):
it offers the precomputed commands in program order (instruction i from the cycle after
instruction i - 1 was accepted), answers the external read channel from an `ExternalMemory`
exactly `config.mem_latency` cycles after each request (in the same cycle for latency 0),
applies write beats, and records every instruction's accept, issue and complete cycle from the
trace port (tags map back to program indices: a unit issues its instructions in program order,
and a tag names the same instruction from its issue to its completion). Cycle 0 is the cycle
`start` is high (docs/hardware.md, "Accelerator").

Elaborating the accelerator and compiling it for pysim costs most of a short run (about 70%
of a 4x4 GEMM test), so each process keeps the compiled simulators of its last few
configurations (`_Harness`, `systolic.sim.rtl.reused_simulators`): a run on a reused
simulator is the run on a fresh one.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amaranth.hdl import Cat, Value
from amaranth.sim import Simulator

from systolic.config import ArrayConfig
from systolic.errors import SimulationError
from systolic.hdl.accelerator import HALT_UNIT, UNITS, Accelerator
from systolic.hdl.event_counters import RTL_EVENTS
from systolic.isa.disassembler import format_instruction
from systolic.isa.program import Program
from systolic.sim.progress import report_cycle
from systolic.sim.result import UNIT_NAMES, InstructionTimes, RunResult
from systolic.sim.rtl.commands import encode_program, unit_index
from systolic.sim.rtl.external_memory import ExternalMemory
from systolic.sim.rtl.reused_simulators import KeptDesigns, ResetBeforeRun
from systolic.sim.rtl.waveform import Waveform, current_waveform, write_vcd

__all__ = ["DEFAULT_WATCHDOG", "run_pysim"]

DEFAULT_WATCHDOG = 2_000_000
"""Cycles after which a run counts as hung when no watchdog is given."""

_STROBE_BITS = 5  # trace strobes: {valid (bit 0), tag (bits 1..4)}
_KEPT_DESIGNS = 3  # compiled simulators a process keeps (one 8x8 design holds ~100 MB)


class _Recorder:
    """Per-instruction cycles, filled from the trace strobes."""

    def __init__(self, program: Program) -> None:
        self.program = program
        count = len(program.instructions)
        self.units = [unit_index(i) for i in program.instructions]
        self.unit_order = [[i for i, u in enumerate(self.units) if u == unit]
                           for unit in range(UNITS)]
        self.accept: list[int | None] = [None] * count
        self.issue: list[int | None] = [None] * count
        self.complete: list[int | None] = [None] * count
        self.accept_tags: list[int | None] = [None] * count
        self.accepted = 0
        self.issued = [0] * UNITS
        self.by_tag: dict[int, int] = {}
        self.last_issue: tuple[int, int] | None = None  # (cycle, index)

    def record(self, cycle: int, trace: int) -> None:
        """Apply the trace strobes of `cycle` (bits of Cat(accept, issue[0..2], complete[0..2]))."""
        if trace & 1:
            index = self.accepted
            self.accepted += 1
            self.accept[index] = cycle
            self.accept_tags[index] = trace >> 1 & 0xF
            if self.units[index] == HALT_UNIT:
                self.issue[index] = self.complete[index] = cycle
        for u in range(UNITS):
            strobe = trace >> (_STROBE_BITS * (1 + u))
            if strobe & 1:
                index = self.unit_order[u][self.issued[u]]
                self.issued[u] += 1
                tag = strobe >> 1 & 0xF
                if self.accept_tags[index] != tag:
                    raise SimulationError(
                        f"trace: instruction {index} issued with tag {tag}, accepted with "
                        f"{self.accept_tags[index]}")
                self.by_tag[tag] = index
                self.issue[index] = cycle
                self.last_issue = (cycle, index)
            strobe = trace >> (_STROBE_BITS * (1 + UNITS + u))
            if strobe & 1:
                tag = strobe >> 1 & 0xF
                index = self.by_tag.pop(tag)
                self.complete[index] = cycle

    def hang_message(self, cycle: int) -> str:
        """Return the watchdog's message: the last instruction issued and the cycle."""
        if self.last_issue is None:
            last = "no instruction was issued"
        else:
            issued_at, index = self.last_issue
            text = format_instruction(self.program.instructions[index])
            last = f"the last instruction issued was {index} ({text}) in cycle {issued_at}"
        waiting = sum(c is None for c in self.complete)
        return (
            f"the program did not finish within {cycle} cycles: {last}; {self.accepted} of "
            f"{len(self.units)} instructions accepted, {waiting} not completed; raise the "
            f"watchdog if the program is just long"
        )

    def times(self) -> tuple[InstructionTimes, ...]:
        """Return the recorded times (every instruction must have all three)."""
        result = []
        for index, (a, i, c) in enumerate(zip(self.accept, self.issue, self.complete)):
            if a is None or i is None or c is None:
                raise SimulationError(f"instruction {index} finished without a complete trace")
            result.append(InstructionTimes(a, i, c))
        return tuple(result)


@dataclass
class _Run:
    """What one run reads and fills: the commands, the memory, the records."""

    commands: list[int]
    recorder: _Recorder
    external: ExternalMemory
    limit: int
    counters: dict[str, int] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)


class _Harness:
    """One configuration's accelerator, compiled once for pysim, with a testbench that runs
    whatever `_Run` is current."""

    def __init__(self, config: ArrayConfig) -> None:
        self.config = config
        self.dut = Accelerator(config)
        self.trace = Cat(self.dut.trace.accept.as_value(),
                         *(s.as_value() for s in self.dut.trace.issue),
                         *(s.as_value() for s in self.dut.trace.complete))
        self.run: _Run | None = None
        sim = Simulator(self.dut)
        sim.add_clock(1e-6)
        sim.add_testbench(self._testbench)
        self.runner = ResetBeforeRun(sim)

    async def _testbench(self, ctx: Any) -> None:
        assert self.run is not None
        await _drive(ctx, self.dut, self.trace, self.run, self.config)
        _read_counters(ctx, self.dut, self.run)


async def _drive(ctx: Any, dut: Accelerator, trace: Value, run: _Run,
                 config: ArrayConfig) -> None:
    """Offer the commands, serve the external memory and record `trace` (the strobes) until
    HALT is accepted; raise SimulationError at the watchdog or when `done` does not rise."""
    commands, latency = run.commands, config.mem_latency
    reads = _ReadChannel(dut, run.external)
    command_port = dut.i_instr.payload.as_value()
    _start(ctx, dut, command_port, commands[0])
    offered = cycle = 0
    while True:
        if latency == 0:  # answer in the request's own cycle
            reads.request_now(ctx, cycle)
            reads.answer(ctx, cycle)
        _, _, accepted, req_valid, req_addr, w_valid, w_bits, events = await ctx.tick().sample(
            dut.i_instr.ready, dut.o_mem_req.valid, dut.o_mem_req.payload.addr,
            dut.o_mem_write.valid, dut.o_mem_write.payload.as_value(), trace)
        if cycle == 0:
            ctx.set(dut.start, 0)
        if latency and req_valid:
            run.external.request(cycle, req_addr)
        if w_valid:
            _write_beat(run.external, w_bits, config.bus_bytes)
        if events:
            run.recorder.record(cycle, events)
        if accepted:
            offered += 1
            if offered == len(commands):
                break
            ctx.set(command_port, commands[offered])
        cycle += 1
        _watch(cycle, run)
        if latency:
            reads.answer(ctx, cycle)
    ctx.set(dut.i_instr.valid, 0)
    if not ctx.get(dut.done):
        raise SimulationError(f"HALT was accepted in cycle {cycle} but done did not rise")


def _start(ctx: Any, dut: Accelerator, command_port: Value, first: int) -> None:
    """Raise `start` and offer the first command; the memory channels are always ready."""
    ctx.set(dut.start, 1)
    ctx.set(dut.i_instr.valid, 1)
    ctx.set(command_port, first)
    ctx.set(dut.o_mem_req.ready, 1)
    ctx.set(dut.o_mem_write.ready, 1)


class _ReadChannel:
    """The external read channel's testbench side: requests go to `external`, whose
    responses (due `mem_latency` cycles later) drive `i_mem_resp`."""

    def __init__(self, dut: Accelerator, external: ExternalMemory) -> None:
        self.req, self.resp, self.external = dut.o_mem_req, dut.i_mem_resp, external
        self.valid = False

    def request_now(self, ctx: Any, cycle: int) -> None:
        """Pass on the request offered in `cycle` (latency 0: read before the clock edge)."""
        if ctx.get(self.req.valid):
            self.external.request(cycle, ctx.get(self.req.payload.addr))

    def answer(self, ctx: Any, at: int) -> None:
        """Drive the memory response due at cycle `at` (valid drops after the last)."""
        data = self.external.response(at)
        if data is not None or self.valid:
            self.valid = data is not None
            ctx.set(self.resp.valid, self.valid)
            if self.valid:
                ctx.set(self.resp.payload.data, data)


def _write_beat(external: ExternalMemory, bits: int, bus_bytes: int) -> None:
    """Apply one write beat, `o_mem_write.payload` as an integer {addr, data, strobes}."""
    bus_bits = 8 * bus_bytes
    external.write_beat(bits & 0xFFFF_FFFF, bits >> 32 & ((1 << bus_bits) - 1),
                        bits >> (32 + bus_bits))


def _watch(cycle: int, run: _Run) -> None:
    """Report progress every 1024 cycles; raise SimulationError when `cycle` reaches the
    watchdog limit."""
    if not cycle & 1023:
        report_cycle(cycle)
    if cycle >= run.limit:
        raise SimulationError(run.recorder.hang_message(cycle))


def _read_counters(ctx: Any, dut: Accelerator, run: _Run) -> None:
    """Copy the performance and event counters into `run`."""
    counters = run.counters
    counters["cycles"] = ctx.get(dut.cycles)
    counters["instructions"] = ctx.get(dut.instructions)
    counters["dispatch_stall"] = ctx.get(dut.dispatch_stall)
    for u, name in enumerate(UNIT_NAMES):
        counters[f"unit_busy_{name}"] = ctx.get(dut.unit_busy[u])
        counters[f"hazard_stall_{name}"] = ctx.get(dut.hazard_stall[u])
    for name in RTL_EVENTS:
        run.events[name] = ctx.get(getattr(dut.events, name))


_harnesses: KeptDesigns[_Harness] = KeptDesigns(_KEPT_DESIGNS)


def run_pysim(program: Program, memory: bytes | bytearray, *, watchdog: int | None = None,
              vcd: str | Path | None = None, waveform: Waveform | None = None) -> RunResult:
    """Run `program` to HALT from the external memory image `memory` (not modified).

    Raises SimulationError when HALT has not been accepted by cycle `watchdog` - 1 (so a
    program with `total_cycles` = T needs `watchdog` > T), naming the last instruction issued
    and the cycle. With `vcd`, writes a VCD waveform of the whole run to that path, holding
    what `waveform` selects (default: `current_waveform()`, which dumps no memory rows).
    """
    config = program.config
    limit = DEFAULT_WATCHDOG if watchdog is None else watchdog
    if limit < 1:
        raise ValueError(f"watchdog must be a positive number of cycles, not {watchdog!r}")
    run = _Run(commands=encode_program(program), recorder=_Recorder(program),
               external=ExternalMemory(bytearray(memory), bus_bytes=config.bus_bytes,
                                       latency=config.mem_latency),
               limit=limit)
    harness = _harnesses.get(config, lambda: _Harness(config))
    harness.run = run
    if vcd is None:
        _harnesses.run(config, harness)
    else:
        def run_with_vcd(sim: Simulator) -> None:
            with write_vcd(sim, vcd, current_waveform() if waveform is None else waveform):
                sim.run()

        _harnesses.run(config, harness, run_with_vcd)
    return RunResult(memory=run.external.image, total_cycles=run.counters["cycles"],
                     times=run.recorder.times(), counters=run.counters, events=run.events)
