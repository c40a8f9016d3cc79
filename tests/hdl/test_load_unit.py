# amaranth: UnusedElaboratable=no

"""LoadUnit against the golden machine, bit for bit, and against `load_timing`, cycle for cycle."""

import dataclasses
import random

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.hdl import Signal, Value
from amaranth.sim import Simulator

from systolic.config import ArrayConfig
from systolic.hdl.load_unit import LoadUnit
from systolic.isa.instructions import Load, LoadTarget
from systolic.isa.memories import Memory, depth, params_row_bytes
from systolic.sim.golden.machine import Machine
from systolic.sim.rtl.reused_simulators import KeptDesigns, ResetBeforeRun
from systolic.sim.timing.load_timing import load_timing

from .streams import pack, unpack_array

CONFIGS = {
    "4x4-bus16": ArrayConfig(rows=4, cols=4, bus_bytes=16, spad_kib=4, acc_kib=4),
    "8x8-bus8": ArrayConfig(rows=8, cols=8, bus_bytes=8, spad_kib=8, acc_kib=4),
    "4x6-i12-bus4": ArrayConfig(rows=4, cols=6, input_width=12, weight_width=6, acc_width=32,
                                bus_bytes=4, spad_kib=4, acc_kib=4),
    "3x5-bus1": ArrayConfig(rows=3, cols=5, bus_bytes=1, spad_kib=4, acc_kib=4),
    "8x4-bus64": ArrayConfig(rows=8, cols=4, bus_bytes=64, spad_kib=8, acc_kib=4),
}


# -- stimulus ----------------------------------------------------------------------------------


def random_load(rng: random.Random, config: ArrayConfig, max_rows: int) -> Load:
    """Return a valid random LOAD whose bytes lie from address 0 up, a few KiB at most."""
    ob = config.operand_bytes
    mem = rng.choice(list(LoadTarget))
    count = rng.randint(1, min(max_rows, depth(config, mem.memory)))
    row = rng.randint(0, depth(config, mem.memory) - count)
    n0 = rng.randint(1, count)
    width = params_row_bytes(config) if mem is LoadTarget.PARAMS else config.spad_row_bytes
    stride0 = rng.choice([width, rng.randint(-3 * width, 3 * width), ob * rng.randint(0, 6)])
    stride1 = rng.choice([n0 * stride0, rng.randint(-40 * width, 40 * width)])
    fields = {}
    if mem is not LoadTarget.PARAMS:
        length = rng.randint(1, config.dim)
        run = rng.choice([1, 2, 3, rng.randint(1, 40), 1000])
        n_mid = rng.choice([1, 2, 3, rng.randint(1, 9), 500])
        stride_mid = rng.choice([run * ob, rng.randint(-64, 64)])
        stride_outer = rng.choice([(n_mid - 1) * stride_mid + run * ob, rng.randint(-300, 300)])
        k0 = rng.choice([0, rng.randint(0, 50), rng.randint(0, 5000)])
        width = config.weight_width if mem is LoadTarget.SPAD_WT else config.input_width
        flip = ob == 1 and width == 8 and rng.random() < 0.5
        fields = {"k0": k0, "length": length, "run": run, "n_mid": n_mid,
                  "stride_mid": stride_mid, "stride_outer": stride_outer, "flip_sign": flip}
    probe = Load(mem, row, count, 0, n0=n0, row_stride0=stride0, row_stride1=stride1, **fields)
    low = probe.footprint(config)[1].first
    instr = dataclasses.replace(probe, ext=max(0, -low + rng.randint(0, 3 * config.bus_bytes)))
    instr.check(config)
    return instr


# -- harness -----------------------------------------------------------------------------------


async def offer_ahead(ctx, stream, words: list[int], rng: random.Random | None) -> list[int]:
    """Offer `words` in order as the dispatcher's queue does (the unit's input contract): each
    word's payload from the cycle after the previous one was taken (from cycle 0 for the
    first), `valid` from the next cycle (without `rng`) or 1 to 3 cycles later (with it, as a
    queue head waits for its hazards); return the cycle in which each was taken."""
    taken: list[int] = []
    cycle = 0
    for word in words:
        ctx.set(stream.valid, 0)
        ctx.set(stream.payload.as_value(), word)
        for _ in range(1 if rng is None else rng.randint(1, 3)):
            await ctx.tick()
            cycle += 1
        ctx.set(stream.valid, 1)
        while not (await ctx.tick().sample(stream.ready))[2]:
            cycle += 1
        taken.append(cycle)
        cycle += 1
    ctx.set(stream.valid, 0)
    return taken


@dataclasses.dataclass
class _Job:
    """One `run_unit` call: what the testbenches read and fill."""

    padded: np.ndarray  # the external memory, padded by two beats
    words: list[int]
    ready_probability: float
    seed: int
    late_valid: bool
    rng: random.Random
    result: dict


class _Harness:
    """A LoadUnit compiled once for pysim, reset before each run
    (`systolic.sim.rtl.reused_simulators`); its testbenches read `self.job`."""

    def __init__(self, config: ArrayConfig, mem_latency: int) -> None:
        self.dut = LoadUnit(config, mem_latency=mem_latency)
        self.bus, self.mem_latency = config.bus_bytes, mem_latency
        self.job: _Job | None = None
        sim = Simulator(self.dut)
        sim.add_clock(1e-6)
        sim.add_testbench(self._memory_model, background=True)
        sim.add_testbench(self._monitor, background=True)
        sim.add_testbench(self._driver)
        self.runner = ResetBeforeRun(sim)

    async def _memory_model(self, ctx):
        job, dut, bus = self.job, self.dut, self.bus
        pending: dict[int, int] = {}
        cycle = 0
        while True:
            ready = job.ready_probability >= 1.0 or job.rng.random() < job.ready_probability
            ctx.set(dut.o_req.ready, ready)
            if ready and ctx.get(dut.o_req.valid):
                address = ctx.get(dut.o_req.payload.addr)
                assert address % bus == 0
                beat = job.padded[address:address + bus]
                pending[cycle + self.mem_latency] = int.from_bytes(beat.tobytes(), "little")
            data = pending.pop(cycle, None)
            ctx.set(dut.i_resp.valid, data is not None)
            ctx.set(dut.i_resp.payload.data, data or 0)
            await ctx.tick()
            cycle += 1

    async def _monitor(self, ctx):
        result, dut = self.job.result, self.dut
        ports = [(name, getattr(dut, name)) for name in ("spad_in", "spad_wt", "params")]
        signals = [s for _, p in ports for s in (p.en, p.addr, p.data.as_value())]
        cycle = 0
        while True:
            _, _, *values = await ctx.tick().sample(dut.o_done.valid,
                                                    dut.o_done.payload.tag, *signals)
            done_valid, done_tag, *port_values = values
            if done_valid:
                result["done"].append((cycle, done_tag))
            for index, (name, _) in enumerate(ports):
                en, addr, data = port_values[3 * index:3 * index + 3]
                if en:
                    result["writes"][name].append((addr, data))
            cycle += 1

    async def _driver(self, ctx):
        job = self.job
        late = random.Random(job.seed) if job.late_valid else None
        job.result["taken"] = await offer_ahead(ctx, self.dut.i_instr, job.words, late)
        for _ in range(100_000):
            if len(job.result["done"]) == len(job.words):
                return
            await ctx.tick()
        raise AssertionError("the unit did not complete every LOAD")


_harnesses: KeptDesigns[_Harness] = KeptDesigns(3)


def run_unit(config: ArrayConfig, program: list[Load], memory: np.ndarray, mem_latency: int,
             *, ready_probability: float = 1.0, seed: int = 0, late_valid: bool = False):
    """Run `program` on a LoadUnit; return (writes per memory, taken cycles, done cycles).

    Each word is on the payload from the cycle after the previous one was taken; `valid`
    rises as soon as the contract allows, or 1 to 3 cycles later at random with `late_valid`
    (`offer_ahead`). The compiled unit of each of the last few (configuration, latency) is
    reused (`_Harness`)."""
    key = (config, mem_latency)
    harness = _harnesses.get(key, lambda: _Harness(config, mem_latency))
    bus = config.bus_bytes
    words = [pack(harness.dut.i_instr.payload.shape(),
                  {"payload": int.from_bytes(i.encode(), "little"), "tag": n % 16})
             for n, i in enumerate(program)]
    job = _Job(padded=np.concatenate([memory, np.zeros(2 * bus, np.uint8)]), words=words,
               ready_probability=ready_probability, seed=seed, late_valid=late_valid,
               rng=random.Random(seed),
               result={"writes": {"spad_in": [], "spad_wt": [], "params": []}, "done": []})
    harness.job = job
    _harnesses.run(key, harness)
    return job.result


def apply_writes(config: ArrayConfig, machine: Machine, writes) -> None:
    """Apply the unit's row writes to a zeroed copy of the machine's on-chip memories."""
    for addr, bits in writes["spad_in"]:
        machine.spad_in[addr] = unpack_array(bits, config.input_width, config.dim)
    for addr, bits in writes["spad_wt"]:
        machine.spad_wt[addr] = unpack_array(bits, config.weight_width, config.dim)
    cols = config.cols
    for addr, bits in writes["params"]:  # hdl.ports.params_row_layout: biases, multipliers, shifts
        machine.bias[addr] = unpack_array(bits, 32, cols)
        machine.multiplier[addr] = unpack_array(bits >> (32 * cols), 32, cols)
        machine.shift[addr] = unpack_array(bits >> (64 * cols), 8, cols)


def check_program(config: ArrayConfig, program: list[Load], mem_latency: int, seed: int,
                  **kwargs) -> dict:
    """Run `program` on the unit and the golden machine; compare state and return the result."""
    end = max(i.footprint(config)[1].last for i in program) + 1
    memory = np.random.default_rng(seed).integers(0, 256, end, dtype=np.uint8)
    golden = Machine(config, end)
    golden.memory[:] = memory
    for instr in program:
        golden.execute(instr)
    result = run_unit(config, program, memory, mem_latency, seed=seed, **kwargs)
    hardware = Machine(config, end)
    apply_writes(config, hardware, result["writes"])
    for name in ("spad_in", "spad_wt", "bias", "multiplier", "shift"):
        np.testing.assert_array_equal(getattr(hardware, name), getattr(golden, name), err_msg=name)
    assert [tag for _, tag in result["done"]] == [n % 16 for n in range(len(program))]
    return result


def expected_done(config: ArrayConfig, program: list[Load], taken: list[int],
                  mem_latency: int) -> list[int]:
    """Return the completion cycles `load_timing` gives for instructions taken at `taken`."""
    done, free, last = [], 0, -1
    for instr, cycle in zip(program, taken, strict=True):
        timing = load_timing(instr, config, mem_latency)
        assert cycle >= free, "the unit took an instruction before the model allows"
        free = cycle + timing.busy
        last = max(cycle + timing.latency, last + 1)
        done.append(last)
    return done


# -- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("mem_latency", [0, 1, *(pytest.param(n, marks=pytest.mark.slow)
                                            for n in (8, 20))])  # ~3-5 s each idle
def test_single_loads_exact(name: str, mem_latency: int) -> None:
    """Each LOAD alone: golden state bit for bit, completion exactly at the modelled cycle."""
    config = CONFIGS[name]
    rng = random.Random(f"{name}-{mem_latency}")
    for trial in range(4):
        instr = random_load(rng, config, max_rows=rng.choice([3, 20, 60]))
        result = check_program(config, [instr], mem_latency, seed=trial)
        (taken,) = result["taken"]
        assert result["done"][0][0] == expected_done(config, [instr], [taken], mem_latency)[0]


@pytest.mark.parametrize("name", ["4x4-bus16", "4x6-i12-bus4", "8x4-bus64"])
def test_back_to_back_stream(name: str) -> None:
    """A stream of LOADs: taken as soon as `busy` allows, each completing at its model cycle."""
    config = CONFIGS[name]
    rng = random.Random(name)
    program = [random_load(rng, config, max_rows=rng.choice([1, 4, 30])) for _ in range(10)]
    result = check_program(config, program, 8, seed=1)
    taken = result["taken"]
    free = taken[0]  # the first word's payload is offered a cycle ahead of its `valid`
    for instr, cycle in zip(program, taken, strict=True):
        assert cycle == free  # offered continuously: taken exactly when the unit is free again
        free = cycle + load_timing(instr, config, 8).busy
    done = [cycle for cycle, _ in result["done"]]
    assert done == expected_done(config, program, taken, 8)


def test_valid_rises_late() -> None:
    """Each word's payload offered 1 to 3 cycles before its `valid` (a queue head waiting for
    its hazards): the golden state, and each completion at its model cycle."""
    config = CONFIGS["8x8-bus8"]
    rng = random.Random("late")
    program = [random_load(rng, config, max_rows=rng.choice([1, 4])) for _ in range(8)]
    result = check_program(config, program, 2, seed=4, late_valid=True)
    assert [cycle for cycle, _ in result["done"]] == expected_done(config, program,
                                                                   result["taken"], 2)


def test_large_load_and_backpressure() -> None:
    """A few hundred rows, and a read channel that refuses requests at random: same state."""
    config = CONFIGS["8x8-bus8"]
    rng = random.Random(7)
    program = [random_load(rng, config, max_rows=300) for _ in range(2)]
    check_program(config, program, 3, seed=2)
    check_program(config, program, 5, seed=3, ready_probability=0.6)


def test_verilog() -> None:
    """The unit converts to Verilog (always-ready streams have constant `ready`: not ports)."""
    unit = LoadUnit(CONFIGS["4x4-bus16"], mem_latency=2)
    values = [Value.cast(value) for _, _, value in unit.signature.flatten(unit)]
    ports = [value for value in values if isinstance(value, Signal)]
    text = verilog.convert(unit, name="load_unit", ports=ports)
    assert "module load_unit" in text
    assert "i_instr__payload" in text and "spad_in__data" in text


def test_bad_latency() -> None:
    with pytest.raises(ValueError, match=r"^mem_latency must be a whole number of cycles, not -1$"):
        LoadUnit(CONFIGS["4x4-bus16"], mem_latency=-1)


@pytest.mark.parametrize("mem", list(Memory)[:2])
def test_depths_match(mem: Memory) -> None:
    """The write ports address every row of their memory."""
    config = CONFIGS["8x8-bus8"]
    unit = LoadUnit(config)
    port = getattr(unit, mem.value)
    assert 2 ** len(port.addr) >= depth(config, mem)
