"""Run instructions through `StoreUnit` with memory models; compare with the golden machine.

`random_machine` fills a golden `Machine` with random state; `run_unit` feeds instructions to
the RTL (acc, spad_in and params read ports answered from that state one cycle later, an
always-ready write channel applying beats with their strobes to a copy of external memory) and
returns the memory it wrote and, per instruction, the cycles it was taken and completed. The
compiled unit of each of the last few (configuration, FIFO depth) is kept and reset between
runs (`_Harness`).
"""

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from amaranth.sim import Simulator

from systolic.config import ArrayConfig
from systolic.hdl.store_unit import StoreUnit
from systolic.isa.instructions import Instruction
from systolic.sim.golden.machine import Machine
from systolic.sim.rtl.reused_simulators import KeptDesigns, ResetBeforeRun

from .streams import TIMEOUT_CYCLES, stream_put

MEMORY_BYTES = 4096


def pack_signed(values, width: int) -> int:
    """Return signed `values` packed `width` bits each from bit 0."""
    mask, bits = (1 << width) - 1, 0
    for index, value in enumerate(values):
        bits |= (int(value) & mask) << (index * width)
    return bits


def random_machine(config: ArrayConfig, rng: np.random.Generator) -> Machine:
    """Return a golden machine with random memory, spad_in, acc and params rows."""
    machine = Machine(config, MEMORY_BYTES)
    machine.memory[:] = rng.integers(0, 256, MEMORY_BYTES)
    half = 1 << (config.input_width - 1)
    machine.spad_in[:] = rng.integers(-half, half, machine.spad_in.shape)
    acc_bits = rng.integers(0, config.acc_width, machine.acc.shape)
    machine.acc[:] = rng.integers(-(2**62), 2**62, machine.acc.shape) >> (63 - acc_bits)
    machine.bias[:] = rng.integers(-(2**31), 2**31, machine.bias.shape) >> rng.integers(
        0, 31, machine.bias.shape)
    machine.multiplier[:] = rng.integers(2**30, 2**31, machine.multiplier.shape)
    wild = rng.random(machine.multiplier.shape) < 0.2
    machine.multiplier[wild] = rng.integers(-(2**31), 2**31, int(wild.sum()))
    machine.shift[:] = np.clip(config.acc_width - 9 + rng.integers(-6, 4, machine.shift.shape),
                               -31, 31)
    return machine


@dataclass
class UnitRun:
    memory: np.ndarray
    taken: list[int]
    completed: list[int]
    beats: int


@dataclass
class _Job:
    """One `run_unit` call: what the testbenches read and fill."""

    acc_rows: list[int]
    spad_rows: list[int]
    params_rows: list[int]
    words: list[int]
    gap_rng: random.Random | None
    write_ready: float
    result: UnitRun


class _Harness:
    """A `StoreUnit` compiled once for pysim, reset before each run
    (`systolic.sim.rtl.reused_simulators`); its testbenches read `self.job`."""

    def __init__(self, config: ArrayConfig, fifo_depth: int) -> None:
        self.dut = StoreUnit(config, fifo_depth=fifo_depth)
        self.bus = config.bus_bytes
        self.job: _Job | None = None
        sim = Simulator(self.dut)
        sim.add_clock(1e-6)
        sim.add_testbench(self._read_ports, background=True)
        sim.add_testbench(self._writes, background=True)
        sim.add_testbench(self._feeder)
        sim.add_testbench(self._completer)
        self.runner = ResetBeforeRun(sim)

    async def _feeder(self, ctx):
        job = self.job
        job.result.taken = await stream_put(ctx, self.dut.i_instr, job.words, rng=job.gap_rng,
                                            valid_probability=0.5)

    async def _completer(self, ctx):
        job, dut = self.job, self.dut
        tags, cycle = [], 0
        async for _, _, valid, tag in ctx.tick().sample(dut.o_complete.valid,
                                                       dut.o_complete.payload.tag):
            if valid:
                tags.append(tag)
                job.result.completed.append(cycle)
                if len(tags) == len(job.words):
                    break
            cycle += 1
            assert cycle < TIMEOUT_CYCLES, f"only {len(tags)} of {len(job.words)} completed"
        assert tags == [t % 16 for t in range(len(job.words))]

    async def _read_ports(self, ctx):
        job, dut = self.job, self.dut
        acc, spad, params = dut.acc_read, dut.spad_read, dut.params_read
        async for _, _, acc_valid, acc_row, spad_en, spad_addr, p_en, p_addr in ctx.tick().sample(
                acc.req.valid, acc.req.payload.row, spad.en, spad.addr,
                params.en, params.addr):
            ctx.set(acc.resp.valid, acc_valid)
            if acc_valid:
                ctx.set(acc.resp.payload.data.as_value(), job.acc_rows[acc_row])
            if spad_en:
                ctx.set(spad.data.as_value(), job.spad_rows[spad_addr])
            if p_en:
                ctx.set(params.data.as_value(), job.params_rows[p_addr])

    async def _writes(self, ctx):
        job, dut = self.job, self.dut
        memory = job.result.memory
        ctx.set(dut.o_write.ready, 1)
        beat = dut.o_write.payload
        ready = True
        async for _, _, valid, addr, data, strobe in ctx.tick().sample(
                dut.o_write.valid, beat.addr, beat.data, beat.strobe):
            if valid and ready:
                assert addr % self.bus == 0
                job.result.beats += 1
                for b in range(self.bus):
                    if strobe >> b & 1:
                        memory[addr + b] = data >> (8 * b) & 0xFF
            if job.gap_rng is not None and job.write_ready < 1.0:
                ready = job.gap_rng.random() < job.write_ready
                ctx.set(dut.o_write.ready, ready)


_harnesses: KeptDesigns[_Harness] = KeptDesigns(3)


def run_unit(config: ArrayConfig, machine: Machine, instructions: Sequence[Instruction], *,
             fifo_depth: int = 16, gap_rng: random.Random | None = None,
             write_ready: float = 1.0) -> UnitRun:
    """Execute `instructions` on the RTL from `machine`'s state (not modified).

    With `gap_rng`, instructions are offered with probability 1/2 per cycle and the write
    channel is ready with probability `write_ready` per cycle.
    """
    cols = config.cols
    params_rows = [
        pack_signed(machine.bias[r], 32) | pack_signed(machine.multiplier[r], 32) << (32 * cols)
        | pack_signed(machine.shift[r], 8) << (64 * cols)
        for r in range(machine.bias.shape[0])
    ]
    job = _Job(acc_rows=[pack_signed(row, config.acc_width) for row in machine.acc],
               spad_rows=[pack_signed(row, config.input_width) for row in machine.spad_in],
               params_rows=params_rows,
               words=[int.from_bytes(i.encode(), "little") | (t % 16) << 512
                      for t, i in enumerate(instructions)],
               gap_rng=gap_rng, write_ready=write_ready,
               result=UnitRun(machine.memory.copy(), [], [], 0))
    key = (config, fifo_depth)
    harness = _harnesses.get(key, lambda: _Harness(config, fifo_depth))
    harness.job = job
    _harnesses.run(key, harness)
    return job.result


def golden_memory(machine: Machine, instructions: Sequence[Instruction]) -> np.ndarray:
    """Return external memory after executing `instructions` in order on a copy of `machine`."""
    copy = Machine(machine.config, machine.memory.size)
    for name in ("memory", "spad_in", "acc", "bias", "multiplier", "shift"):
        getattr(copy, name)[...] = getattr(machine, name)
    for instr in instructions:
        copy.execute(instr)
    return copy.memory
