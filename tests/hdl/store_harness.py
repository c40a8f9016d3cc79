"""Run instructions through `StoreUnit` with memory models; compare with the golden machine.

`random_machine` fills a golden `Machine` with random state; `run_unit` feeds instructions to
the RTL (acc, spad_in and params read ports answered from that state one cycle later, an
always-ready write channel applying beats with their strobes to a copy of external memory) and
returns the memory it wrote and, per instruction, the cycles it was taken and completed.
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


def run_unit(config: ArrayConfig, machine: Machine, instructions: Sequence[Instruction], *,
             fifo_depth: int = 16, gap_rng: random.Random | None = None,
             write_ready: float = 1.0) -> UnitRun:
    """Execute `instructions` on the RTL from `machine`'s state (not modified).

    With `gap_rng`, instructions are offered with probability 1/2 per cycle and the write
    channel is ready with probability `write_ready` per cycle.
    """
    dut = StoreUnit(config, fifo_depth=fifo_depth)
    memory = machine.memory.copy()
    acc_rows = [pack_signed(row, config.acc_width) for row in machine.acc]
    spad_rows = [pack_signed(row, config.input_width) for row in machine.spad_in]
    cols = config.cols
    params_rows = [
        pack_signed(machine.bias[r], 32) | pack_signed(machine.multiplier[r], 32) << (32 * cols)
        | pack_signed(machine.shift[r], 8) << (64 * cols)
        for r in range(machine.bias.shape[0])
    ]
    words = [int.from_bytes(i.encode(), "little") | (t % 16) << 512
             for t, i in enumerate(instructions)]
    result = UnitRun(memory, [], [], 0)
    bus = config.bus_bytes

    async def feeder(ctx):
        result.taken = await stream_put(ctx, dut.i_instr, words, rng=gap_rng,
                                        valid_probability=0.5)

    async def completer(ctx):
        tags, cycle = [], 0
        async for _, _, valid, tag in ctx.tick().sample(dut.o_complete.valid,
                                                       dut.o_complete.payload.tag):
            if valid:
                tags.append(tag)
                result.completed.append(cycle)
                if len(tags) == len(words):
                    break
            cycle += 1
            assert cycle < TIMEOUT_CYCLES, f"only {len(tags)} of {len(words)} completed"
        assert tags == [t % 16 for t in range(len(words))]

    async def read_ports(ctx):
        acc, spad, params = dut.acc_read, dut.spad_read, dut.params_read
        async for _, _, acc_valid, acc_row, spad_en, spad_addr, p_en, p_addr in ctx.tick().sample(
                acc.req.valid, acc.req.payload.row, spad.en, spad.addr,
                params.en, params.addr):
            ctx.set(acc.resp.valid, acc_valid)
            if acc_valid:
                ctx.set(acc.resp.payload.data.as_value(), acc_rows[acc_row])
            if spad_en:
                ctx.set(spad.data.as_value(), spad_rows[spad_addr])
            if p_en:
                ctx.set(params.data.as_value(), params_rows[p_addr])

    async def writes(ctx):
        ctx.set(dut.o_write.ready, 1)
        beat = dut.o_write.payload
        ready = True
        async for _, _, valid, addr, data, strobe in ctx.tick().sample(
                dut.o_write.valid, beat.addr, beat.data, beat.strobe):
            if valid and ready:
                assert addr % bus == 0
                result.beats += 1
                for b in range(bus):
                    if strobe >> b & 1:
                        memory[addr + b] = data >> (8 * b) & 0xFF
            if gap_rng is not None and write_ready < 1.0:
                ready = gap_rng.random() < write_ready
                ctx.set(dut.o_write.ready, ready)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(read_ports, background=True)
    sim.add_testbench(writes, background=True)
    sim.add_testbench(feeder)
    sim.add_testbench(completer)
    sim.run()
    return result


def golden_memory(machine: Machine, instructions: Sequence[Instruction]) -> np.ndarray:
    """Return external memory after executing `instructions` in order on a copy of `machine`."""
    copy = Machine(machine.config, machine.memory.size)
    for name in ("memory", "spad_in", "acc", "bias", "multiplier", "shift"):
        getattr(copy, name)[...] = getattr(machine, name)
    for instr in instructions:
        copy.execute(instr)
    return copy.memory
