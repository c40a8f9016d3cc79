"""The whole accelerator on whole programs: bit-exact with the golden machine, exact unit timing.

Every program runs on the RTL (`run_program`, backend "rtl") and on
`systolic.sim.golden.machine.Machine`; the final external memory must be equal byte for byte.
The per-instruction times must respect program order, the hazards and each unit's own timing
model (LOAD and STORE durations exactly; EXECUTE through `ExecuteTiming` plus the completion
merge rule), and the counters must equal what the times imply.
"""

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.accelerator import HALT_UNIT, Accelerator
from systolic.isa.instructions import Compute, Halt, Load, LoadTarget, Preload, Store, Unit
from systolic.isa.program import MemorySegment, Program
from systolic.sim.result import InstructionTimes, RunResult
from systolic.sim.rtl.commands import encode_command
from systolic.sim.run.backends import run_program
from systolic.sim.timing.dispatch_model import HAZARD_CYCLES
from systolic.sim.timing.execute_timing import ExecuteTiming
from systolic.sim.timing.load_timing import load_duration
from systolic.sim.timing.store_timing import duration as store_duration

from .accelerator_programs import (
    A_ADDR,
    B_ADDR,
    P_ADDR,
    Y_ADDR,
    gemm_program,
    golden_image,
    mixed_gemm_program,
    operands,
    params_segment,
    program_image,
    small_config,
    vector_program,
)

WS, OS = Dataflow.WS, Dataflow.OS
UNIT_OF = {Unit.LD: 0, Unit.EX: 1, Unit.ST: 2}


def conflicts(program: Program, i: int, j: int) -> bool:
    """Return whether instructions i and j have conflicting footprints."""
    config = program.config
    return any(a.conflicts(b) for a in program.instructions[i].footprint(config)
               for b in program.instructions[j].footprint(config))


def check_times(program: Program, result: RunResult) -> None:
    """Check the times against program order, hazards, the unit timing models and counters."""
    config = program.config
    instrs = program.instructions
    times = result.times
    assert len(times) == len(instrs)
    accepts = [t.accept for t in times]
    assert accepts == sorted(set(accepts)), "one acceptance per cycle, in program order"
    halt = times[-1]
    assert halt.accept == halt.issue == halt.complete == result.total_cycles
    assert all(t.complete < halt.accept for t in times[:-1])
    units = [UNIT_OF[i.UNIT] for i in instrs[:-1]]
    for index, (instr, t) in enumerate(zip(instrs[:-1], times[:-1], strict=True)):
        assert t.accept < t.issue < t.complete, (index, t)
        if isinstance(instr, Load):
            assert t.complete - t.issue == load_duration(instr, config, config.mem_latency)
        elif instr.UNIT is Unit.ST:
            assert t.complete - t.issue == store_duration(instr, config)
        for older in range(index):
            if units[older] != units[index] and conflicts(program, older, index):
                assert t.issue > times[older].complete, (older, index)
    for unit in range(3):
        mine = [i for i, u in enumerate(units) if u == unit]
        issues = [times[i].issue for i in mine]
        assert issues == sorted(set(issues)), f"unit {unit} issues in program order"
        completes = [times[i].complete for i in mine]
        assert len(set(completes)) == len(completes), f"unit {unit}: one completion per cycle"
        if unit != 1:
            assert completes == sorted(completes)
        busy = set()
        for i in mine:
            busy.update(range(times[i].issue, times[i].complete))
        assert result.counters[f"unit_busy_{('ld', 'ex', 'st')[unit]}"] == len(busy)
    check_execute_timing(program, result)
    counters = result.counters
    assert counters["cycles"] == result.total_cycles
    assert counters["instructions"] == len(instrs)
    refused = sum(t.accept - max(1, before.accept + 1)
                  for before, t in zip((InstructionTimes(0, 0, 0), *times), times[:-1]))
    assert counters["dispatch_stall"] == refused  # every refused non-HALT cycle while busy
    for name in ("hazard_stall_ld", "hazard_stall_ex", "hazard_stall_st"):
        assert 0 <= counters[name] < result.total_cycles


def check_execute_timing(program: Program, result: RunResult) -> int:
    """EX takes and completes each instruction as `ExecuteTiming` says, given when the
    dispatcher offered it; completions reach the dispatcher merged: in strobe order, COMPUTE
    first on a tie, one per cycle. Return how many completions the merge delayed."""
    instrs, times = program.instructions, result.times
    model = ExecuteTiming(program.config)
    strobes = []
    previous_issue = 0
    for index, instr in enumerate(instrs[:-1]):
        if instr.UNIT is not Unit.EX:
            continue
        offered = max([times[index].accept + HAZARD_CYCLES, previous_issue + 1] + [
            times[older].complete + 1 for older in range(index)
            if instrs[older].UNIT is not Unit.EX and conflicts(program, older, index)])
        timing = model.issue(instr, offered)
        assert timing.taken == times[index].issue, (index, instr)
        previous_issue = timing.taken
        strobes.append((timing.completed, isinstance(instr, Preload), index))
    delivered, delayed = -1, 0
    for cycle, _, index in sorted(strobes):
        delivered = max(cycle, delivered + 1)
        delayed += delivered > cycle
        assert times[index].complete == delivered, (index, instrs[index])
    return delayed


def run_and_check(program: Program) -> RunResult:
    image = program_image(program)
    result = run_program(program, image, watchdog=200_000)
    expected = golden_image(program, image)
    assert bytes(result.memory) == expected
    check_times(program, result)
    return result


@pytest.mark.parametrize(("rows", "cols", "latency", "bus", "mkn"), [
    (1, 1, 0, 1, (3, 2, 2)),
    (2, 3, 1, 4, (5, 7, 4)),
    (4, 4, 8, 8, (9, 10, 6)),
    pytest.param(8, 8, 1, 16, (12, 19, 9), marks=pytest.mark.slow),  # ~9 s each idle
])
@pytest.mark.parametrize("dataflow", [WS, OS])
def test_gemm_matches_golden(dataflow, rows, cols, latency, bus, mkn) -> None:
    config = small_config(rows, cols, dataflow, mem_latency=latency, bus_bytes=bus)
    rng = np.random.default_rng([rows, cols, latency, *mkn, dataflow is WS])
    a, b = operands(rng, *mkn)
    run_and_check(gemm_program(config, a, b, rng))


@pytest.mark.parametrize(("rows", "cols", "latency", "bus", "mkn"), [
    pytest.param(2, 2, 1, 4, (3, 5, 3)),
    pytest.param(4, 4, 8, 8, (9, 10, 6), marks=pytest.mark.slow),
])
def test_both_dataflows_in_one_program(rows, cols, latency, bus, mkn) -> None:
    """`Dataflow.BOTH`: WS, then OS, then WS again in one program: bit-exact, exact timing
    (the EXECUTE unit drains the array at each change of dataflow, `ExecuteTiming`)."""
    config = small_config(rows, cols, Dataflow.BOTH, mem_latency=latency, bus_bytes=bus)
    rng = np.random.default_rng([rows, cols, latency, *mkn, 2])
    a, b = operands(rng, *mkn)
    run_and_check(mixed_gemm_program(config, a, b, rng))


@pytest.mark.parametrize("dataflow", [WS, OS])
def test_k1_and_extreme_values(dataflow) -> None:
    config = small_config(2, 3, dataflow, mem_latency=0)
    rng = np.random.default_rng(11)
    a, b = operands(rng, 4, 1, 3)
    run_and_check(gemm_program(config, a, b, rng))
    a, b = operands(rng, 3, 9, 3, extreme=True)  # -128·-128 sums
    run_and_check(gemm_program(config, a, b, rng, k_chunk=2 if dataflow is WS else 5))


def ex_heavy_program(config, rng: np.random.Generator, count: int) -> Program:
    """Return LOADs of both scratchpads, then `count` random PRELOAD/COMPUTE with small m
    (PRELOAD and COMPUTE completions collide), then STOREs of every accumulator row used."""
    rows_in = 8
    instrs = [
        Load.dense(LoadTarget.SPAD_IN, 0, rows_in, A_ADDR, config.dim, config.dim),
        Load.dense(LoadTarget.SPAD_WT, 0, 2 * config.rows, B_ADDR, config.dim, config.dim),
        Load.params(0, 1, P_ADDR, 0),
    ]
    for _ in range(count):
        if rng.random() < 0.5:
            k, n = int(rng.integers(1, config.rows + 1)), int(rng.integers(1, config.cols + 1))
            instrs.append(Preload(int(rng.integers(0, config.rows + 1)), k, n))
        else:
            m = int(rng.integers(1, 3))
            instrs.append(Compute(int(rng.integers(0, rows_in - m + 1)), m,
                                  int(rng.integers(0, 4)), accumulate=bool(rng.random() < 0.5)))
    instrs.append(Store(0, 5, config.cols, 0, 0, -128, 127, Y_ADDR, row_stride1=config.cols))
    segments = (
        MemorySegment(A_ADDR, rng.integers(-128, 128, rows_in * config.dim).astype(np.int8)
                      .tobytes()),
        MemorySegment(B_ADDR, rng.integers(-128, 128, 2 * config.rows * config.dim)
                      .astype(np.int8).tobytes()),
        params_segment(rng, config, 1),
    )
    return Program(config, (*instrs, Halt()), segments)


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (2, 3)])
def test_preload_and_compute_completions_merge(rows, cols) -> None:
    """Back-to-back EX instructions: same-cycle completions are delivered one per cycle."""
    config = small_config(rows, cols, WS, mem_latency=0)
    rng = np.random.default_rng(rows * 10 + cols)
    program = ex_heavy_program(config, rng, 60)
    result = run_and_check(program)
    assert check_execute_timing(program, result) > 0
    assert result.counters["dispatch_stall"] > 0  # the EX queue fills up


@pytest.mark.parametrize("dataflow", [WS, OS])
def test_wide_operands(dataflow) -> None:
    """12-bit operands stored in two bytes, extreme and random values."""
    config = small_config(2, 3, dataflow, mem_latency=1, input_width=12, weight_width=12)
    rng = np.random.default_rng(12)
    a, b = rng.integers(-2048, 2048, (4, 7)), rng.integers(-2048, 2048, (7, 5))
    a[0], b[:, 0] = -2048, -2048
    run_and_check(gemm_program(config, a, b, rng))


def test_single_buffered_loads_wait_for_the_reader() -> None:
    """Every chunk reuses the same scratchpad rows: each LOAD waits for the COMPUTE before."""
    config = small_config(2, 2, WS, mem_latency=1)
    rng = np.random.default_rng(5)
    a, b = operands(rng, 6, 6, 2)
    program = gemm_program(config, a, b, rng, single_buffer=True)
    result = run_and_check(program)
    instrs, times = program.instructions, result.times
    waited = 0
    for index, instr in enumerate(instrs):
        if isinstance(instr, Load) and index > 4:
            readers = [i for i in range(index) if instrs[i].UNIT is Unit.EX
                       and any(acc.conflicts(mine) for acc in instrs[i].footprint(config)
                               for mine in instr.footprint(config))]
            assert readers
            assert times[index].issue > times[readers[-1]].complete
            waited += 1
    assert waited >= 4
    assert result.counters["hazard_stall_ld"] > 0


@pytest.mark.parametrize(("rows", "cols", "latency", "hw"), [
    (2, 3, 0, (3, 4)),
    (4, 4, 8, (4, 5)),
])
def test_pool_add_copy_match_golden(rows, cols, latency, hw) -> None:
    config = small_config(rows, cols, OS, mem_latency=latency)
    rng = np.random.default_rng([rows, cols, latency])
    run_and_check(vector_program(config, rng, *hw, lanes=config.dim - 1 or 1))


@pytest.mark.slow  # about 2 minutes on the Amaranth simulator; 2x2 to 8x8 run by default
def test_16x16_gemm() -> None:
    config = small_config(16, 16, WS, mem_latency=8, bus_bytes=16)
    rng = np.random.default_rng(16)
    a, b = operands(rng, 10, 20, 17)
    run_and_check(gemm_program(config, a, b, rng))


def test_start_busy_done_and_counter_clear() -> None:
    """busy from the cycle after start until HALT's acceptance; done after; start clears."""
    config = small_config(2, 2, WS)
    dut = Accelerator(config)
    halt = encode_command(Halt(), config)
    preload = encode_command(Preload(0, 1, 1), config)
    seen: list[tuple[int, int, int, int]] = []

    async def testbench(ctx):
        for run in range(2):
            assert ctx.get(dut.busy) == 0
            assert ctx.get(dut.done) == run
            ctx.set(dut.i_instr.payload.as_value(), preload if run else halt)
            ctx.set(dut.i_instr.valid, 1)
            ctx.set(dut.start, 1)
            for cycle in range(40):
                _, _, busy, done, ready = await ctx.tick().sample(
                    dut.busy, dut.done, dut.i_instr.ready)
                seen.append((run, cycle, busy, done))
                ctx.set(dut.start, 0)
                if ready and ctx.get(dut.i_instr.payload.unit) == HALT_UNIT:
                    ctx.set(dut.i_instr.valid, 0)
                elif ready:
                    ctx.set(dut.i_instr.payload.as_value(), halt)
            assert ctx.get(dut.done) == 1
            assert ctx.get(dut.instructions) == 1 + run

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    first = [(c, b, d) for r, c, b, d in seen if r == 0]
    assert first[:3] == [(0, 0, 0), (1, 1, 0), (2, 0, 1)]  # HALT alone: accepted in cycle 1
    second = [(c, b, d) for r, c, b, d in seen if r == 1]
    assert second[0] == (0, 0, 1)  # done holds until start's cycle ends
    assert second[1][1:] == (1, 0)
    assert all(b == 0 and d == 1 for _, b, d in second[-5:])


def test_store_overlapping_compute_results_are_exact() -> None:
    """STORE right after COMPUTE: issued the cycle after EX completes, reads the new sums."""
    config = small_config(4, 4, WS, mem_latency=0)
    rng = np.random.default_rng(3)
    a, b = operands(rng, 1, 4, 4)
    program = gemm_program(config, a, b, rng)
    result = run_and_check(program)
    store = next(i for i, x in enumerate(program.instructions) if isinstance(x, Store))
    assert result.times[store].issue == result.times[store - 1].complete + 1


@pytest.mark.slow  # ~9 s idle; test_lint converts the 2x2 accelerator by default
def test_verilog_conversion() -> None:
    """Every top-level port is an explicit signal: the default-sized 2x2 converts."""
    config = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1)  # default sizes: ~7 s more
    text = verilog.convert(Accelerator(config), name="accelerator")
    for port in ("i_instr__payload", "o_mem_req__valid", "i_mem_resp__payload", "trace__accept",
                 "unit_busy__2", "hazard_stall__0", "dispatch_stall", "start", "done"):
        assert port in text
