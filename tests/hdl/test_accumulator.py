# amaranth: UnusedElaboratable=no

"""Accumulator against a cycle-stamped numpy model of its memory, bit-exact.

The model applies each write at the cycle the hardware takes it and answers each read request
with the rows as they stand `WRITE_TO_READ` cycles after the writes it may see, so every test
also checks the documented visibility of writes to reads, cycle for cycle.
"""

import random
import re
from dataclasses import dataclass

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from systolic.config import ArrayConfig
from systolic.hdl.accumulator import READ_LATENCY, WRITE_TO_READ, Accumulator

from .streams import field, pack, stream_get, stream_put, unpack_array

# -- model -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    row: int
    data: tuple[int, ...]
    accumulate: bool


class MemoryModel:
    """Rows of `cols` accumulators held as uint64 bit patterns modulo 2**acc_width."""

    def __init__(self, depth: int, cols: int, acc_width: int):
        self.acc_width = acc_width
        self.mask = np.uint64((1 << acc_width) - 1)
        self.rows = np.zeros((depth, cols), dtype=np.uint64)

    def write(self, write: Write) -> None:
        bits = np.array([v & int(self.mask) for v in write.data], dtype=np.uint64)
        if write.accumulate:
            bits = (self.rows[write.row] + bits) & self.mask  # uint64 arrays wrap silently
        self.rows[write.row] = bits

    def read(self, row: int) -> list[int]:
        """Return row `row` as signed integers."""
        sign = 1 << (self.acc_width - 1)
        return [int(v) - (int(v) & sign) * 2 for v in self.rows[row]]


def expected_reads(depth, cols, acc_width, writes, write_cycles, reads, read_cycles):
    """Answer each read (taken in cycle r) from the writes taken in cycle r - WRITE_TO_READ or
    earlier, applied in order."""
    model = MemoryModel(depth, cols, acc_width)
    answers, applied = [], 0
    for row, cycle in sorted(zip(reads, read_cycles, strict=True), key=lambda rc: rc[1]):
        while applied < len(writes) and write_cycles[applied] <= cycle - WRITE_TO_READ:
            model.write(writes[applied])
            applied += 1
        answers.append(model.read(row))
    return answers


# -- stimulus ----------------------------------------------------------------------------------


def random_value(rng: random.Random, width: int) -> int:
    """A signed `width`-bit value: extremes, small values or anything, in equal measure."""
    kind = rng.randrange(3)
    if kind == 0:
        return rng.choice([-(1 << (width - 1)), (1 << (width - 1)) - 1, -1, 0])
    if kind == 1:
        return rng.randint(-4, 4)
    return rng.randint(-(1 << (width - 1)), (1 << (width - 1)) - 1)


def random_writes(rng: random.Random, count: int, depth: int, cols: int, acc_width: int):
    """Writes whose rows often repeat the previous row or the one two writes back."""
    writes: list[Write] = []
    for index in range(count):
        choice = rng.random()
        if index >= 1 and choice < 0.35:
            row = writes[-1].row
        elif index >= 2 and choice < 0.55:
            row = writes[-2].row
        else:
            row = rng.randrange(depth)
        data = tuple(random_value(rng, acc_width) for _ in range(cols))
        writes.append(Write(row, data, rng.random() < 0.7))
    return writes


# -- simulation --------------------------------------------------------------------------------


@dataclass
class Run:
    write_cycles: list[int]
    read_cycles: list[int]
    responses: list[list[int]]
    response_cycles: list[int]
    idle: list[int]


def simulate(dut: Accumulator, writes, reads, *, seed=0, write_valid=1.0, read_valid=1.0,
             resp_ready=1.0, sweep_after_writes=()) -> tuple[Run, list[int]]:
    """Drive `writes` and `reads` concurrently (random gaps and stalls with the given
    probabilities); after the writes and reads are done, read the rows `sweep_after_writes`.

    Return the run and the full list of rows read (reads, then the sweep).
    """
    rng = random.Random(seed)
    write_layout = dut.i_write.payload.shape()
    req_layout = dut.read.req.payload.shape()
    resp_layout = dut.read.resp.payload.shape()
    write_beats = [pack(write_layout, {"row": w.row, "data": list(w.data),
                                       "accumulate": int(w.accumulate)}) for w in writes]
    all_reads = [*reads, *sweep_after_writes]
    run = Run([], [], [], [], [])
    writes_done = []

    async def writer(ctx):
        run.write_cycles = await stream_put(ctx, dut.i_write, write_beats,
                                            rng=random.Random(rng.random()),
                                            valid_probability=write_valid)
        writes_done.append(True)

    async def reader(ctx):
        beats = [pack(req_layout, {"row": row}) for row in reads]
        cycles = await stream_put(ctx, dut.read.req, beats, rng=random.Random(rng.random()),
                                  valid_probability=read_valid)
        elapsed = cycles[-1] + 1 if cycles else 0
        while not writes_done:
            await ctx.tick()
            elapsed += 1
        sweep = [pack(req_layout, {"row": row}) for row in sweep_after_writes]
        later = await stream_put(ctx, dut.read.req, sweep)
        run.read_cycles = cycles + [elapsed + c for c in later]

    async def consumer(ctx):
        beats, run.response_cycles = await stream_get(
            ctx, dut.read.resp, len(all_reads), rng=random.Random(rng.random()),
            ready_probability=resp_ready)
        run.responses = [unpack_array(field(resp_layout, bits, "data"), dut.acc_width, dut.cols)
                         for bits in beats]
        while not writes_done:
            await ctx.tick()
        for _ in range(WRITE_TO_READ + 1):  # let the last write land, for the idle trace
            await ctx.tick()

    async def idle_monitor(ctx):
        async for _, _, idle in ctx.tick().sample(dut.o_idle):
            run.idle.append(idle)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.add_testbench(consumer)
    sim.add_testbench(idle_monitor, background=True)
    sim.run()
    return run, all_reads


def check_against_model(dut: Accumulator, writes, run: Run, reads) -> None:
    """Compare every response with the model and check the o_idle trace, cycle by cycle."""
    assert len(run.responses) == len(reads)
    expected = expected_reads(dut.depth, dut.cols, dut.acc_width, writes, run.write_cycles,
                              reads, run.read_cycles)
    order = sorted(range(len(reads)), key=lambda j: run.read_cycles[j])
    assert order == list(range(len(reads)))  # requests are taken in order
    np.testing.assert_array_equal(np.array(run.responses, dtype=object),
                                  np.array(expected, dtype=object))
    taken = set(run.write_cycles)
    assert run.idle == [int(cycle - 1 not in taken) for cycle in range(len(run.idle))]


# -- tests -------------------------------------------------------------------------------------

CONFIGS = [  # depth, cols, acc_width
    (1, 1, 8),
    (1, 3, 16),
    (2, 2, 8),
    (5, 3, 12),
    (16, 4, 32),
    (8, 2, 64),
]


@pytest.mark.parametrize(("depth", "cols", "acc_width"), CONFIGS)
@pytest.mark.parametrize(("write_valid", "read_valid", "resp_ready"),
                         [(1.0, 1.0, 1.0), (0.7, 0.6, 0.5)])
def test_random_writes_and_reads(depth, cols, acc_width, write_valid, read_valid, resp_ready):
    seed = hash((depth, cols, acc_width, write_valid)) & 0xFFFF
    rng = random.Random(seed)
    writes = random_writes(rng, 250, depth, cols, acc_width)
    hot = {w.row for w in writes[-20:]}
    reads = [rng.choice(sorted(hot)) if rng.random() < 0.5 else rng.randrange(depth)
             for _ in range(200)]
    dut = Accumulator(depth=depth, cols=cols, acc_width=acc_width)
    run, all_reads = simulate(dut, writes, reads, seed=seed, write_valid=write_valid,
                              read_valid=read_valid, resp_ready=resp_ready,
                              sweep_after_writes=range(depth))
    if write_valid == 1.0:  # i_write never backpressures
        assert run.write_cycles == list(range(len(writes)))
    check_against_model(dut, writes, run, all_reads)


def test_back_to_back_accumulates_to_one_row_wrap_around():
    """Accumulates in consecutive cycles to one 8-bit row: every partial sum read out wraps."""
    dut = Accumulator(depth=4, cols=2, acc_width=8)
    writes = [Write(2, (100, -100), False)] + [Write(2, (20, -20), True)] * 6
    writes += [Write(3, (127, -128), False), Write(3, (1, -1), True), Write(2, (0, 0), True)]
    reads = [2] * 14 + [3] * 4
    run, all_reads = simulate(dut, writes, reads, sweep_after_writes=range(4))
    check_against_model(dut, writes, run, all_reads)
    # 100 + 6 * 20 = 220 -> -36; -100 - 120 = -220 -> 36; 127 + 1 -> -128; -128 - 1 -> 127.
    assert run.responses[-4:] == [[0, 0], [0, 0], [-36, 36], [-128, 127]]


def test_write_visibility_and_latencies_exactly():
    """Reads of a row taken 0, 1 and 2 cycles after a write see old, old and new contents;
    responses come READ_LATENCY cycles after their requests; o_idle falls for one cycle."""
    assert (READ_LATENCY, WRITE_TO_READ) == (1, 2)
    dut = Accumulator(depth=4, cols=2, acc_width=16)
    writes = [Write(1, (7, -7), False), Write(1, (5, 5), True)]  # taken in cycles 0 and 1
    reads = [1] * 6  # taken in cycles 0 to 5
    run, all_reads = simulate(dut, writes, reads)
    assert run.write_cycles == [0, 1]
    assert run.read_cycles == list(range(6))
    assert run.response_cycles == [c + READ_LATENCY for c in run.read_cycles]
    assert run.responses == [[0, 0], [0, 0], [7, -7], [12, -2], [12, -2], [12, -2]]
    assert run.idle[:5] == [1, 0, 0, 1, 1]
    check_against_model(dut, writes, run, all_reads)


def test_response_held_while_stalled():
    """A response that waits for `ready` keeps the value read, although the row changes."""
    dut = Accumulator(depth=2, cols=1, acc_width=8)
    writes = [Write(0, (3,), False)] + [Write(0, (1,), True)] * 30
    reads = [0] * 10
    run, all_reads = simulate(dut, writes, reads, seed=5, resp_ready=0.2)
    assert max(b - a for a, b in zip(run.read_cycles, run.response_cycles, strict=True)) > 1
    check_against_model(dut, writes, run, all_reads)


def test_from_config():
    config = ArrayConfig(rows=4, cols=6, acc_width=24, acc_kib=3)
    dut = Accumulator.from_config(config)
    assert (dut.depth, dut.cols, dut.acc_width) == (config.acc_depth, 6, 24) == (170, 6, 24)
    assert dut.i_write.payload.shape()["row"].shape.width == 8
    assert dut.read.req.payload.shape()["row"].shape.width == 8
    Fragment.get(dut, None)  # it elaborates


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"depth": 0, "cols": 2, "acc_width": 8}, "depth must be a positive integer, not 0"),
    ({"depth": 4, "cols": 0, "acc_width": 8}, "cols must be a positive integer, not 0"),
    ({"depth": 4, "cols": 2, "acc_width": 1},
     "acc_width must be an integer of at least 2, not 1"),
    ({"depth": 4.0, "cols": 2, "acc_width": 8}, "depth must be a positive integer, not 4.0"),
])
def test_parameter_checks(kwargs, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Accumulator(**kwargs)


def test_verilog_infers_a_memory_array():
    text = verilog.convert(Accumulator(depth=256, cols=4, acc_width=32), name="accumulator")
    assert re.search(r"^\s*reg \[127:0\] \S+ \[255:0\];$", text, re.MULTILINE), \
        "the rows should be one Verilog memory array, not flip-flops"
    assert "module accumulator" in text
