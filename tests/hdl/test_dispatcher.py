# amaranth: UnusedElaboratable=no

"""Dispatcher RTL against the cycle-exact model `systolic.sim.timing.dispatch_model`.

Every run drives the RTL with a program and units that behave exactly as `UnitModel` says, and
requires the accept, issue and completion cycle and the table entry of every instruction, and
`idle` in every cycle, to equal the model's. Directed tests also pin the numbers by hand.
"""

import random

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from systolic.hdl.dispatcher import Dispatcher
from systolic.hdl.range_overlap import MEMORY_IDS, compact_contract_holds
from systolic.isa.memories import Access, Memory
from systolic.sim.timing.dispatch_model import (
    MEMORY_ID,
    DispatchModel,
    Job,
    JobTimes,
    UnitModel,
    UnitTiming,
)

from .streams import field, pack

PAYLOAD_WIDTH = 16
TIMEOUT = 20_000

SPAD_IN, SPAD_WT, ACC, EXTERNAL = Memory.SPAD_IN, Memory.SPAD_WT, Memory.ACC, Memory.EXTERNAL
PARAMS = Memory.PARAMS


def w(memory: Memory, first: int, last: int) -> Access:
    return Access(memory, first, last, True)


def r(memory: Memory, first: int, last: int) -> Access:
    return Access(memory, first, last, False)


# -- RTL harness -------------------------------------------------------------------------------


def instr_beat(dut: Dispatcher, index: int, job: Job, ranges: int) -> int:
    entries = [
        {"valid": 1, "mem": MEMORY_ID[a.memory], "first": a.first, "last": a.last,
         "write": int(a.write)}
        for a in job.ranges
    ]
    entries += [{"valid": 0, "mem": 0, "first": 0, "last": 0, "write": 0}] * (ranges - len(entries))
    return pack(dut.instr_layout, {"unit": job.unit, "ranges": entries, "payload": index})


def run_rtl(jobs: list[Job], *, units: int = 3, table_entries: int = 16, queue_depth: int = 4,
            ranges: int = 3, addr_width: int = 32,
            onchip_width: int | None = None) -> tuple[list[JobTimes], list[int]]:
    """Simulate the RTL; return each job's times and `idle` in every cycle until the end."""
    dut = Dispatcher(units=units, table_entries=table_entries, queue_depth=queue_depth,
                     ranges=ranges, addr_width=addr_width, onchip_width=onchip_width,
                     payload_shape=PAYLOAD_WIDTH)
    beats = [instr_beat(dut, index, job, ranges) for index, job in enumerate(jobs)]
    dispatched: dict[int, int] = {}
    issued: dict[int, tuple[int, int]] = {}
    completed: dict[int, int] = {}
    idle: list[int] = []

    async def producer(ctx):
        cycle = 0
        for index, beat in enumerate(beats):
            ctx.set(dut.i_instr.valid, 0)
            while cycle < jobs[index].arrival:
                await ctx.tick()
                cycle += 1
            ctx.set(dut.i_instr.payload.as_value(), beat)
            ctx.set(dut.i_instr.valid, 1)
            while True:
                _, _, ready = await ctx.tick().sample(dut.i_instr.ready)
                cycle += 1
                if ready:
                    dispatched[index] = cycle - 1
                    break
                assert cycle < TIMEOUT, f"instruction {index} never accepted"
        ctx.set(dut.i_instr.valid, 0)

    def unit_testbench(u: int):
        expected = sum(job.unit == u for job in jobs)
        issue, complete = dut.o_issue[u], dut.i_complete[u]

        async def testbench(ctx):
            unit = UnitModel()
            pending: dict[int, tuple[int, int]] = {}  # completion cycle -> (tag, index)
            cycle, taken = 0, 0
            while taken < expected or pending:
                ready = unit.ready(cycle)
                ctx.set(issue.ready, ready)
                done = pending.pop(cycle, None)
                ctx.set(complete.valid, done is not None)
                if done is not None:
                    ctx.set(complete.payload, done[0])
                    completed[done[1]] = cycle
                _, _, valid, bits = await ctx.tick().sample(issue.valid, issue.payload.as_value())
                if valid and ready:
                    index = field(dut.issue_layout, bits, "payload")
                    tag = field(dut.issue_layout, bits, "tag")
                    assert jobs[index].unit == u, f"instruction {index} issued to unit {u}"
                    issued[index] = (cycle, tag)
                    pending[unit.issue(cycle, jobs[index].timing)] = (tag, index)
                    taken += 1
                cycle += 1
                assert cycle < TIMEOUT, f"unit {u} hung after {taken} of {expected} issues"
            ctx.set(complete.valid, 0)

        return testbench

    async def monitor(ctx):
        while True:
            _, _, value = await ctx.tick().sample(dut.idle)
            idle.append(value)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(producer)
    for u in range(units):
        sim.add_testbench(unit_testbench(u))
    sim.add_testbench(monitor, background=True)
    sim.run()
    times = [
        JobTimes(dispatched[i], issued[i][0], completed[i], issued[i][1]) for i in range(len(jobs))
    ]
    return times, idle


def expected_idle(times: list[JobTimes], cycles: int) -> list[int]:
    """`idle` in each cycle: no instruction accepted before it and completed in it or later."""
    return [int(not any(t.dispatch < c <= t.complete for t in times)) for c in range(cycles)]


def check(jobs: list[Job], **params: int) -> list[JobTimes]:
    """Assert that the RTL and the model agree on every job and on `idle`; return the times."""
    model_params = {k: v for k, v in params.items() if k not in ("addr_width", "onchip_width")}
    model = DispatchModel(**model_params).run(jobs)
    rtl, idle = run_rtl(jobs, **params)
    assert rtl == model
    assert idle == expected_idle(model, len(idle))
    return model


def cycles(times: list[JobTimes]) -> list[tuple[int, int, int]]:
    return [(t.dispatch, t.issue, t.complete) for t in times]


# -- directed ----------------------------------------------------------------------------------


def test_read_after_write_waits_for_the_writer():
    times = check([Job(0, [w(SPAD_IN, 0, 3)], 5), Job(1, [r(SPAD_IN, 2, 5)], 2)])
    assert cycles(times) == [(0, 3, 8), (1, 9, 11)]  # issue from acceptance + 3


def test_write_after_read_waits_for_the_reader():
    times = check([Job(1, [r(SPAD_IN, 0, 3)], 5), Job(0, [w(SPAD_IN, 3, 3)], 2)])
    assert cycles(times) == [(0, 3, 8), (1, 9, 11)]


def test_write_after_write_waits_and_each_range_counts():
    jobs = [
        Job(1, [r(SPAD_IN, 0, 9), r(SPAD_WT, 0, 9), w(ACC, 0, 7)], 4),
        Job(2, [r(EXTERNAL, 0, 99), w(ACC, 7, 7)], 3),
    ]
    assert cycles(check(jobs)) == [(0, 3, 7), (1, 8, 11)]


def test_independent_instructions_do_not_wait():
    jobs = [
        Job(0, [w(SPAD_IN, 0, 3), r(EXTERNAL, 2**32 - 8, 2**32 - 1)], 9),
        Job(1, [r(SPAD_IN, 4, 7)], 9),  # adjacent, not overlapping
        Job(2, [r(EXTERNAL, 0, 2**32 - 1)], 9),  # overlapping reads
        Job(1, [w(SPAD_WT, 0, 3)], 1),  # same addresses, another memory
    ]
    assert cycles(check(jobs)) == [(0, 3, 12), (1, 4, 13), (2, 5, 14), (3, 13, 14)]


def test_same_unit_instructions_are_not_checked():
    jobs = [
        Job(0, [w(SPAD_IN, 0, 3)], UnitTiming(busy=1, latency=10)),
        Job(0, [w(SPAD_IN, 0, 3)], UnitTiming(busy=1, latency=10)),
        Job(1, [r(SPAD_IN, 0, 0)], 1),
    ]
    assert cycles(check(jobs)) == [(0, 3, 13), (1, 4, 14), (2, 15, 16)]


def test_table_full_stalls_until_a_completion():
    jobs = [Job(u, [], 10) for u in (0, 1, 2, 0, 1)]
    times = check(jobs, table_entries=4)
    assert cycles(times) == [(0, 3, 13), (1, 4, 14), (2, 5, 15), (3, 13, 23), (14, 17, 27)]
    assert [t.tag for t in times] == [0, 1, 2, 3, 0]


def test_queue_full_stalls_dispatch_of_every_unit():
    jobs = [Job(0, [], 10) for _ in range(4)] + [Job(1, [], 1)]
    times = check(jobs, queue_depth=2)
    assert cycles(times) == [(0, 3, 13), (1, 13, 23), (4, 23, 33), (14, 33, 43), (15, 18, 19)]


@pytest.mark.parametrize("arrival", [1, 2, 3, 4])
def test_completion_in_the_accept_cycle_is_not_waited_for(arrival):
    jobs = [Job(0, [w(SPAD_IN, 0, 0)], 1), Job(1, [r(SPAD_IN, 0, 0)], 1, arrival)]
    issue = max(5, arrival + 3)  # after the completion in 4 unless accepted in that cycle
    assert cycles(check(jobs)) == [(0, 3, 4), (arrival, issue, issue + 1)]


def test_issue_follows_a_completion_by_one_cycle_through_a_chain():
    jobs = [
        Job(0, [w(SPAD_IN, 0, 0)], 3),
        Job(1, [r(SPAD_IN, 0, 0), w(ACC, 0, 0)], 3),
        Job(2, [r(ACC, 0, 0)], 3),
    ]
    assert cycles(check(jobs)) == [(0, 3, 6), (1, 7, 10), (2, 11, 14)]


# -- random programs ---------------------------------------------------------------------------


def random_timing(rng: random.Random):
    kind = rng.random()
    if kind < 0.4:
        return rng.randint(1, 8)
    if kind < 0.8:
        return UnitTiming(busy=rng.randint(1, 4), latency=rng.randint(1, 14))
    period = rng.randint(2, 5)
    return lambda issue: 1 + issue % period  # depends on when the unit starts


def random_jobs(rng: random.Random, count: int, *, units: int, ranges: int, space: int,
                addr_width: int) -> list[Job]:
    """Random footprints in a `space`-row window (smaller: more overlap), some gaps in arrival."""
    memories = [SPAD_IN, SPAD_WT, ACC][: rng.randint(1, 3)]
    space = min(space, 2**addr_width)
    base = rng.choice([0, 2**addr_width - space])
    jobs, arrival = [], 0
    for _ in range(count):
        footprint = []
        for _ in range(rng.randint(0, ranges)):
            first = base + rng.randrange(space)
            last = min(first + rng.randrange(max(1, space // 4)), 2**addr_width - 1)
            footprint.append(Access(rng.choice(memories), first, last, rng.random() < 0.5))
        if rng.random() < 0.15:
            arrival += rng.randint(1, 12)
        jobs.append(Job(rng.randrange(units), footprint, random_timing(rng), arrival))
    return jobs


CONFIGS = [
    {"units": 3, "table_entries": 16, "queue_depth": 4, "ranges": 3, "addr_width": 32},
    {"units": 3, "table_entries": 5, "queue_depth": 2, "ranges": 3, "addr_width": 32},
    {"units": 2, "table_entries": 3, "queue_depth": 1, "ranges": 1, "addr_width": 8},
    {"units": 4, "table_entries": 8, "queue_depth": 3, "ranges": 2, "addr_width": 12},
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@pytest.mark.parametrize("seed", range(6))
def test_random_programs_match_the_model(config, seed):
    rng = random.Random(seed * 101 + config["table_entries"])
    space = rng.choice([4, 16, 64, 1024])
    jobs = random_jobs(rng, 60, units=config["units"], ranges=config["ranges"], space=space,
                       addr_width=config["addr_width"])
    check(jobs, **config)


def random_compact_jobs(rng: random.Random, count: int, *, units: int, ranges: int,
                        onchip_width: int, addr_width: int) -> list[Job]:
    """Random footprints that keep the compact contract: on-chip rows below 2**onchip_width
    (crowded in a small window), at most one external range (anywhere in the address space,
    often in one small window so that LOADs and STOREs overlap)."""
    onchip_space = 1 << onchip_width
    window = rng.choice([0, 2**addr_width - 64])
    jobs, arrival = [], 0
    for _ in range(count):
        footprint: list[Access] = []
        external = False
        for _ in range(rng.randint(0, ranges)):
            if not external and rng.random() < 0.3:
                external = True
                first = window + rng.randrange(64) if rng.random() < 0.8 else rng.randrange(
                    2**addr_width)
                last = min(first + rng.randrange(32), 2**addr_width - 1)
                footprint.append(Access(EXTERNAL, first, last, rng.random() < 0.5))
                continue
            first = rng.randrange(onchip_space)
            last = min(first + rng.randrange(max(1, onchip_space // 4)), onchip_space - 1)
            memory = rng.choice([SPAD_IN, SPAD_WT, ACC, PARAMS])
            footprint.append(Access(memory, first, last, rng.random() < 0.5))
        assert compact_contract_holds(footprint, onchip_width)
        if rng.random() < 0.15:
            arrival += rng.randint(1, 12)
        jobs.append(Job(rng.randrange(units), footprint, random_timing(rng), arrival))
    return jobs


COMPACT_CONFIGS = [
    {"units": 3, "table_entries": 16, "queue_depth": 4, "ranges": 3, "addr_width": 32,
     "onchip_width": 9},
    {"units": 3, "table_entries": 5, "queue_depth": 2, "ranges": 3, "addr_width": 32,
     "onchip_width": 3},
    {"units": 2, "table_entries": 4, "queue_depth": 1, "ranges": 2, "addr_width": 12,
     "onchip_width": 12},
]


@pytest.mark.parametrize("config", COMPACT_CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@pytest.mark.parametrize("seed", range(4))
def test_compact_tables_match_the_model(config, seed):
    rng = random.Random(seed * 37 + config["onchip_width"])
    jobs = random_compact_jobs(rng, 60, units=config["units"], ranges=config["ranges"],
                               onchip_width=config["onchip_width"],
                               addr_width=config["addr_width"])
    check(jobs, **config)


def test_compact_table_compares_external_ranges_at_full_width():
    jobs = [
        Job(0, [w(SPAD_IN, 0, 3), r(EXTERNAL, 2**32 - 8, 2**32 - 1)], 9),
        Job(2, [r(ACC, 0, 3), w(EXTERNAL, 2**31 - 8, 2**31 - 1)], 1),  # low bits overlap
        Job(2, [r(PARAMS, 511, 511), w(EXTERNAL, 2**32 - 1, 2**32 - 1)], 1),
        Job(1, [r(SPAD_IN, 4, 511), w(ACC, 4, 4)], 1),
    ]
    times = check(jobs, onchip_width=9)
    assert cycles(times) == [(0, 3, 12), (1, 4, 5), (2, 13, 14), (3, 6, 7)]


# -- parameters and conversion -----------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"units": 0}, r"^units must be an integer of at least 1, not 0$"),
    ({"table_entries": 0}, r"^table_entries must be an integer of at least 1, not 0$"),
    ({"queue_depth": 1.5}, r"^queue_depth must be an integer of at least 1, not 1\.5$"),
    ({"ranges": 0}, r"^ranges must be an integer of at least 1, not 0$"),
    ({"addr_width": True}, r"^addr_width must be an integer of at least 1, not True$"),
    ({"onchip_width": 0}, r"^onchip_width must be an integer of at least 1, not 0$"),
    ({"addr_width": 8, "onchip_width": 9},
     r"^onchip_width must be at most addr_width \(8\), not 9$"),
    ({"payload_shape": "word"},
     r"^payload_shape must be a shape \(a width or a layout\), not 'word'$"),
])
def test_parameters_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Dispatcher(**{"payload_shape": 8, **kwargs})


def test_memory_ids_agree_with_the_model():
    assert {memory.value: index for memory, index in MEMORY_ID.items()} == {
        name: index for index, name in enumerate(MEMORY_IDS)
    }


@pytest.mark.parametrize("onchip_width", [None, 9])
def test_verilog_conversion(onchip_width):
    text = verilog.convert(Dispatcher(payload_shape=32, onchip_width=onchip_width),
                           name="dispatcher")
    assert "module dispatcher" in text
    for port in ("i_instr__ready", "o_issue__0__valid", "i_complete__2__payload", "idle"):
        assert port in text
