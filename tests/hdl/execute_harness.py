"""Run an `ExecuteUnit` on a random EX program and compare it with the golden machine.

`random_program` builds a seeded sequence of EX instructions (ragged tiles, K-chunk
accumulation, PRELOAD reuse and replacement; runs of both families for `Dataflow.BOTH`) with random availability cycles; `run_rtl` runs it
on the unit with scratchpad memories and an accumulator model fed from `o_acc`, and returns the
accumulator contents and the cycle each instruction was taken and completed;
`run_golden` executes the same instructions on `systolic.sim.golden.machine.Machine`.
"""

import random
from dataclasses import dataclass

import numpy as np
from amaranth import Module, signed
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.execute_unit import ExecuteUnit
from systolic.isa.instructions import Compute, ComputeOS, Instruction, Preload
from systolic.isa.memories import Memory as Mem
from systolic.isa.memories import depth
from systolic.sim.golden.machine import Machine

__all__ = ["ExRun", "random_program", "random_state", "run_golden", "run_rtl"]

TIMEOUT = 50_000


@dataclass
class ExRun:
    """What the RTL did: accumulator contents and per-instruction taken/completed cycles."""

    acc: np.ndarray
    taken: list[int]
    completed: list[int]


def random_state(config: ArrayConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Return random `spad_in` and `spad_wt` contents (signed operands of their widths)."""
    def fill(memory: Mem, width: int) -> np.ndarray:
        rows = depth(config, memory)
        return rng.integers(-(1 << (width - 1)), 1 << (width - 1), (rows, config.dim))
    return fill(Mem.SPAD_IN, config.input_width), fill(Mem.SPAD_WT, config.weight_width)


def random_program(config: ArrayConfig, rng: random.Random, count: int,
                   *, max_m: int = 12, gap: int = 6) -> tuple[list[Instruction], list[int]]:
    """Return `count` random EX instructions and the cycle from which each is offered."""
    in_depth, wt_depth = depth(config, Mem.SPAD_IN), depth(config, Mem.SPAD_WT)
    acc_depth = config.acc_depth
    program: list[Instruction] = []
    output_stationary = config.dataflow is Dataflow.OS
    for _ in range(count):
        if config.dataflow is Dataflow.BOTH and rng.random() < 0.25:
            output_stationary = not output_stationary  # (BOTH: runs of either family)
        if not output_stationary:
            if rng.random() < 0.45:
                k, n = rng.randint(1, config.rows), rng.randint(1, config.cols)
                program.append(Preload(row=rng.randint(0, wt_depth - k), k=k, n=n))
            else:
                m = rng.randint(1, min(max_m, in_depth, acc_depth))
                program.append(Compute(in_row=rng.randint(0, in_depth - m), m=m,
                                       acc_row=rng.randint(0, acc_depth - m),
                                       accumulate=rng.random() < 0.5))
        else:
            m, n = rng.randint(1, config.rows), rng.randint(1, config.cols)
            k = rng.randint(1, min(3 * config.dim, wt_depth))
            chunks = -(-k // config.dim)
            a_stride = 0 if chunks == 1 else rng.randint(m, m + 3)
            span = (chunks - 1) * a_stride + m
            program.append(ComputeOS(
                in_row=rng.randint(0, in_depth - span), m=m, n=n, k=k, a_stride=a_stride,
                wt_row=rng.randint(0, wt_depth - k), acc_row=rng.randint(0, acc_depth - m),
                accumulate=rng.random() < 0.5))
    available, cycle = [], 0
    for _ in program:
        cycle += rng.choice([0, 0, 0, 1, rng.randint(0, gap)])
        available.append(cycle)
    return program, available


def run_golden(config: ArrayConfig, spad_in: np.ndarray, spad_wt: np.ndarray,
               program: list[Instruction]) -> np.ndarray:
    """Return the accumulator after executing `program` on the golden machine."""
    machine = Machine(config, 64)
    machine.spad_in[...] = spad_in
    machine.spad_wt[...] = spad_wt
    for instr in program:
        machine.execute(instr)
    return machine.acc.copy()


def _wrap(values: np.ndarray, width: int) -> np.ndarray:
    low = values & ((1 << width) - 1)
    return np.where(low >= 1 << (width - 1), low - (1 << width), low)


def run_rtl(config: ArrayConfig, spad_in: np.ndarray, spad_wt: np.ndarray,
            program: list[Instruction], available: list[int],
            ready_probability: float = 1.0) -> ExRun:
    """Run `program` on an `ExecuteUnit` (see the module docstring).

    With `ready_probability < 1` the accumulator stream is back-pressured at random (seeded).
    """
    m = Module()
    m.submodules.ex = ex = ExecuteUnit(config)
    for name, contents, width in [("spad_in", spad_in, config.input_width),
                                  ("spad_wt", spad_wt, config.weight_width)]:
        memory = Memory(shape=data.ArrayLayout(signed(width), config.dim),
                        depth=contents.shape[0], init=[list(map(int, row)) for row in contents])
        m.submodules[name] = memory
        port = memory.read_port()
        user = getattr(ex, name)
        m.d.comb += [port.addr.eq(user.addr), port.en.eq(user.en), user.data.eq(port.data)]

    acc = np.zeros((config.acc_depth, config.cols), dtype=np.int64)
    taken: list[int] = [-1] * len(program)
    completed: list[int] = [-1] * len(program)
    words = [int.from_bytes(instr.encode(), "little") for instr in program]
    is_preload = [isinstance(instr, Preload) for instr in program]
    preload_order = [i for i, p in enumerate(is_preload) if p]
    compute_order = [i for i, p in enumerate(is_preload) if not p]
    acc_layout = ex.o_acc.payload.shape()
    width, cols = config.acc_width, config.cols

    async def feeder(ctx):
        cycle = 0
        for index, word in enumerate(words):
            while cycle < available[index]:
                await ctx.tick()
                cycle += 1
            ctx.set(ex.i_instr.payload, {"payload": word, "tag": index % 16})
            ctx.set(ex.i_instr.valid, 1)
            while True:
                _, _, ready = await ctx.tick().sample(ex.i_instr.ready)
                cycle += 1
                if ready:
                    taken[index] = cycle - 1
                    break
                assert cycle < TIMEOUT, f"instruction {index} never taken"
            ctx.set(ex.i_instr.valid, 0)

    ready_rng = random.Random(len(program))

    async def monitor(ctx):
        ctx.set(ex.o_acc.ready, 1)
        preloads, computes, cycle = iter(preload_order), iter(compute_order), 0
        remaining = len(program)
        payload = ex.o_acc.payload.as_value()
        while remaining:
            if ready_probability < 1:
                ctx.set(ex.o_acc.ready, ready_rng.random() < ready_probability)
            _, _, valid, ready, bits, p_done, c_done = await ctx.tick().sample(
                ex.o_acc.valid, ex.o_acc.ready, payload, ex.o_preload_done, ex.o_compute_done)
            if valid and ready:
                beat = data.Const(acc_layout, bits)
                row = int(beat.row)
                values = np.array([int(beat.data[j]) for j in range(cols)], dtype=np.int64)
                acc[row] = _wrap(acc[row] * int(beat.accumulate) + values, width)
            for done, order in [(p_done, preloads), (c_done, computes)]:
                if done.valid:
                    index = next(order)
                    assert done.tag == index % 16
                    completed[index] = cycle
                    remaining -= 1
            cycle += 1
            assert cycle < TIMEOUT, "the unit hung"

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(feeder)
    sim.add_testbench(monitor)
    sim.run()
    return ExRun(acc, taken, completed)
