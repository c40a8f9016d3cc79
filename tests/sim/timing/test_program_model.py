"""The whole-accelerator cycle model against the RTL, the dispatcher model and the unit timings.

The RTL tests run random realistic programs (tiled GEMMs and im2col convolutions with
double-buffered LOADs and accumulated K chunks, STOREs, POOLs, ADDs and COPYs) on random
configurations under the Amaranth simulator and require the model backend to report the same
cycles for every instruction, the same total and counters, and the same memory image.
"""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import SimulationError
from systolic.isa.instructions import (
    Compute,
    ComputeOS,
    Copy,
    Halt,
    Load,
    LoadTarget,
    Preload,
    Store,
)
from systolic.isa.program import Program
from systolic.sim.golden.machine import Machine
from systolic.sim.run.backends import run_program
from systolic.sim.timing.dispatch_model import MEMORY_ID, DispatchModel, Job
from systolic.sim.timing.load_timing import load_beats, load_timing
from systolic.sim.timing.program_facts import Describer
from systolic.sim.timing.program_model import ProgramModel
from systolic.sim.timing.store_timing import duration, unit_timing

from ...support.random_programs import (
    SyntheticProgram,
    random_program,
    synthetic_program,
)

MAX_RTL_INSTRUCTIONS = 60  # keeps one pysim run around a second


def random_config(rng: np.random.Generator, dataflow: Dataflow, *, largest: int = 4
                  ) -> ArrayConfig:
    """A configuration with small arrays and every bus width and latency of interest."""
    return ArrayConfig(
        rows=int(rng.integers(1, largest + 1)), cols=int(rng.integers(1, largest + 1)),
        dataflow=dataflow, input_width=int(rng.choice([8, 8, 8, 12])),
        spad_kib=int(rng.integers(1, 3)), acc_kib=int(rng.integers(1, 3)),
        bus_bytes=int(2 ** rng.integers(0, 7)), mem_latency=int(rng.integers(0, 21)))


def small_case(seed: int, *, largest: int = 4, layers: int = 2,
               limit: int = MAX_RTL_INSTRUCTIONS, activation: bool = False,
               softmax: bool = False) -> SyntheticProgram:
    """A random configuration and program of at most `limit` instructions (`activation`,
    `softmax`: with issue 13's instructions and flags, `random_program`)."""
    rng = np.random.default_rng(seed)
    config = random_config(rng, (Dataflow.WS, Dataflow.OS)[seed % 2], largest=largest)
    while True:
        case = random_program(config, rng, layers=layers, activation=activation,
                              softmax=softmax)
        if len(case.program.instructions) <= limit:
            return case


def assert_same_as_rtl(case: SyntheticProgram) -> None:
    rtl = run_program(case.program, case.memory, backend="rtl")
    model = run_program(case.program, case.memory, backend="model")
    assert model.times == rtl.times
    assert model.total_cycles == rtl.total_cycles
    assert dict(model.counters) == dict(rtl.counters)
    assert model.memory == rtl.memory


@pytest.mark.parametrize(
    "seed", [*range(3), *(pytest.param(s, marks=pytest.mark.slow) for s in range(3, 50))]
)  # 3 in the default run (about 4 s each on the Amaranth simulator), all 50 in the slow set
def test_random_programs_match_the_rtl(seed: int) -> None:
    assert_same_as_rtl(small_case(seed))


@pytest.mark.parametrize("seed", [3, pytest.param(4, marks=pytest.mark.slow),
                                  pytest.param(5, marks=pytest.mark.slow)])
def test_programs_of_both_dataflows_match_the_rtl(seed: int) -> None:
    """`Dataflow.BOTH`: GEMMs of either dataflow in one program (the EXECUTE unit drains the
    array at each change)."""
    rng = np.random.default_rng(seed)
    config = random_config(rng, Dataflow.BOTH)
    while True:
        case = random_program(config, rng, layers=3)
        kinds = {type(i) for i in case.program.instructions}
        if (len(case.program.instructions) <= 2 * MAX_RTL_INSTRUCTIONS
                and Compute in kinds and ComputeOS in kinds):
            break
    assert_same_as_rtl(case)


@pytest.mark.parametrize("wanted", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_merged_execute_completions_match_the_rtl(wanted: int) -> None:
    # Programs where a PRELOAD's completion strobe delays an older COMPUTE's in the merge
    # after a younger instruction used it: the model has to return to a checkpoint. The first
    # such program by default (4 s on the Amaranth simulator), three in the slow set.
    found = 0
    for seed in range(0, 4000, 2):  # weight-stationary
        case = small_case(seed, layers=1, limit=120)
        if ProgramModel(case.program.config).run(case.program.instructions).rollbacks:
            assert_same_as_rtl(case)
            found += 1
            if found == wanted:
                return
    pytest.fail("no program needed the merge's rollback")


def test_a_full_table_matches_the_rtl() -> None:
    # One-beat LOADs issue every 2 cycles and take 43 to complete: with COPYs waiting for them,
    # all 16 table entries fill and dispatch stalls on the table as well as on the LOAD queue.
    config = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1, bus_bytes=8, mem_latency=40)
    instrs: list = []
    for i in range(24):
        instrs.append(Load.dense(LoadTarget.SPAD_IN, row=i, count=1, ext=8 * i, row_stride=8,
                                 length=2))
        if i % 6 == 5:
            instrs.append(Copy(in_row=i - 5, m=6, lanes=2, ext=512 + 16 * i, n0=1,
                               row_stride1=2))
    program = Program(config, (*instrs, Halt()))
    memory = bytearray(np.random.default_rng(0).integers(0, 256, 1024, np.uint8).tobytes())
    assert_same_as_rtl(SyntheticProgram(program, memory))
    times = ProgramModel(config).run(program.instructions)
    in_flight = [sum(times.accept[j] < times.accept[i] - 1 <= times.complete[j] for j in range(i))
                 for i in range(len(instrs))]
    assert max(in_flight) == 16


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1200))
def test_bigger_random_programs_match_the_rtl(seed: int) -> None:
    assert_same_as_rtl(small_case(seed, largest=8, layers=2, limit=200))


# -- the composition against the unit-level models ------------------------------------------


@pytest.mark.parametrize("softmax", [False, True])
@pytest.mark.parametrize("activation", [False, True])
def test_load_and_store_programs_equal_the_dispatch_model(activation: bool,
                                                          softmax: bool) -> None:
    # Without EXECUTE the program model is the dispatcher model with the units' timings and
    # the host's arrival rule (the first command in cycle 1, each after the previous one).
    # (With `activation`: TABLE, COPY lut, ADD mul and b_broadcast as well; with `softmax`
    # SOFTMAX and TABLE wide.)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        config = random_config(rng, Dataflow.WS)
        program = random_program(config, rng, layers=3, activation=activation,
                                 softmax=softmax).program
        instrs = [i for i in program.instructions
                  if type(i).__name__ in ("Load", "Pool", "Add", "Copy", "Table", "Softmax")]
        jobs = []
        for instr in instrs:
            timing = (load_timing(instr, config, config.mem_latency) if isinstance(instr, Load)
                      else unit_timing(instr, config))
            jobs.append(Job(0 if isinstance(instr, Load) else 2, instr.footprint(config),
                            timing, arrival=1))
        expected = DispatchModel().run(jobs)
        got = ProgramModel(config).run([*instrs, Halt()])
        assert [(t.dispatch, t.issue, t.complete) for t in expected] == list(
            zip(got.accept, got.issue, got.complete))[:-1]
        assert got.total_cycles == max([1, *(t.complete + 1 for t in expected),
                                        expected[-1].dispatch + 1 if expected else 1])


def test_one_layer_by_hand() -> None:
    config = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1, bus_bytes=4, mem_latency=3)
    load_w = Load.dense(LoadTarget.SPAD_WT, row=0, count=2, ext=0, row_stride=2, length=2)
    load_a = Load.dense(LoadTarget.SPAD_IN, row=0, count=3, ext=8, row_stride=2, length=2)
    store = Store(acc_row=0, m=3, n=2, param_row=0, zero_point=0, lo=-128, hi=127, ext=64,
                  n0=1, row_stride1=2)
    program = [load_w, load_a, Preload(row=0, k=2, n=2), Compute(in_row=0, m=3, acc_row=0),
               store, Halt()]
    timing = ProgramModel(config).run(program)
    # LOAD w: accepted 1, issued 1 + 3 = 4 (the dispatcher compares its hazards in 2 and
    # records them in 3), one beat per row (2 bytes inside a 4-byte beat): done 4 + 2 + 3 + 2 =
    # 11. LOAD a follows in the LOAD unit from 4 + max(2, 2) = 6: 6 + 3 + 5 = 14.
    assert timing.accept[:2] == (1, 2) and timing.issue[:2] == (4, 6)
    assert timing.complete[:2] == (11, 14)
    # PRELOAD waits for its weights (LOAD w completes in 11): issued 12; COMPUTE waits for A.
    assert timing.issue[2] == 12 and timing.issue[3] == 15
    # STORE waits for COMPUTE and takes duration() cycles; HALT follows the last completion.
    assert timing.issue[4] == timing.complete[3] + 1
    assert timing.complete[4] == timing.issue[4] + duration(store, config)
    assert timing.total_cycles == timing.complete[4] + 1
    assert timing.accept[5] == timing.issue[5] == timing.complete[5] == timing.total_cycles
    assert timing.counters["cycles"] == timing.total_cycles
    assert timing.counters["instructions"] == 6
    assert timing.counters["hazard_stall_ex"] == (12 - 4) + (15 - 13)  # heads ready from 4, 13


def test_a_full_table_and_queue_stall_dispatch() -> None:
    config = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1, bus_bytes=1, mem_latency=20)
    loads = [Load.dense(LoadTarget.SPAD_IN, row=i, count=1, ext=4 * i, row_stride=2, length=2)
             for i in range(8)]
    timing = ProgramModel(config).run([*loads, Halt()])
    # One LOAD issued every 2 cycles (2 beats each), from 4, one accepted every cycle: in cycle
    # 6 the LOAD queue holds four unissued LOADs (2nd to 5th), so the 6th waits for the 2nd's
    # issue (6), the 7th for the 3rd's (8) and the 8th for the 4th's (10).
    assert timing.issue[:8] == tuple(4 + 2 * i for i in range(8))
    assert timing.accept[:8] == (1, 2, 3, 4, 5, 7, 9, 11)
    assert timing.counters["dispatch_stall"] == 3
    model = ProgramModel(config, table_entries=2)
    small_table = model.run([*loads, Halt()])
    assert small_table.accept[2] == small_table.complete[0] + 1


@pytest.mark.parametrize("softmax", [False, True])
def test_describer_cache_equals_the_instruction_model(softmax: bool) -> None:
    # (with `softmax`: TABLE and TABLE wide, SOFTMAX and STORE raw among them)
    for dataflow in Dataflow:
        config = ArrayConfig(rows=4, cols=3, dataflow=dataflow, bus_bytes=8)
        describer = Describer(config)
        for instr in synthetic_program(config, 3000, seed=dataflow is Dataflow.OS, scale=2,
                                       activation=softmax,
                                       softmax=softmax).instructions[:-1]:
            unit, ranges, cost = describer.describe(instr)
            assert ranges == tuple((MEMORY_ID[a.memory], a.first, a.last, a.write)
                                   for a in instr.footprint(config))
            if isinstance(instr, Load):
                assert cost == load_beats(instr, config)
            elif unit == 2:
                assert cost == duration(instr, config)


def _uses_the_activation_unit(case: SyntheticProgram) -> bool:
    names = {type(i).__name__ for i in case.program.instructions}
    flags = {name for i in case.program.instructions for name in ("lut", "mul", "b_broadcast")
             if getattr(i, name, False)}
    return "Table" in names and len(flags) >= 2


def _uses_softmax_and_raw(case: SyntheticProgram) -> bool:
    instrs = case.program.instructions
    return (any(type(i).__name__ == "Softmax" for i in instrs)
            and any(getattr(i, "raw", False) for i in instrs))


@pytest.mark.parametrize("activation", [False, True, "softmax"])
def test_model_backend_memory_is_the_golden_models(activation: bool | str) -> None:
    case = small_case(7, layers=3, limit=400)
    if activation is True:  # the first program with a TABLE and two of the new flags
        case = next(c for c in (small_case(seed, layers=5, limit=400, activation=True)
                                for seed in range(100)) if _uses_the_activation_unit(c))
    elif activation:  # the first with a SOFTMAX and a STORE raw
        case = next(c for c in (small_case(seed, layers=5, limit=400, activation=True,
                                           softmax=True)
                                for seed in range(100)) if _uses_softmax_and_raw(c))
    result = run_program(case.program, case.memory, backend="model")
    machine = Machine(case.program.config, len(case.memory))
    machine.memory[:] = np.frombuffer(bytes(case.memory), np.uint8)
    machine.run(case.program.instructions)
    assert result.memory == bytearray(machine.memory.tobytes())
    assert len(result.times) == len(case.program.instructions)


def test_model_backend_watchdog_names_the_last_issue() -> None:
    case = small_case(3)
    total = run_program(case.program, case.memory, backend="model").total_cycles
    run_program(case.program, case.memory, backend="model", watchdog=total + 1)
    with pytest.raises(SimulationError, match=rf"^the program did not finish within {total} "
                                              r"cycles: the last instruction issued was \d+ "):
        run_program(case.program, case.memory, backend="model", watchdog=total)


@pytest.mark.parametrize("cut", [pytest.param(1, marks=pytest.mark.slow), 5,
                                 pytest.param(20, marks=pytest.mark.slow)])
def test_watchdog_message_equals_the_rtls(cut: int) -> None:
    case = small_case(11)
    total = run_program(case.program, case.memory, backend="model").total_cycles
    messages = []
    for backend in ("rtl", "model"):
        with pytest.raises(SimulationError) as caught:
            run_program(case.program, case.memory, backend=backend, watchdog=total - cut)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_the_model_uses_the_accelerators_sizes_and_counter_names() -> None:
    from systolic.hdl import accelerator
    from systolic.sim.result import COUNTER_NAMES as RESULT_COUNTERS
    from systolic.sim.timing import program_model

    assert program_model.TABLE_ENTRIES == accelerator.TABLE_ENTRIES
    assert program_model.QUEUE_DEPTH == accelerator.QUEUE_DEPTH
    assert program_model.COUNTER_NAMES == RESULT_COUNTERS


def test_programs_must_end_with_halt() -> None:
    config = ArrayConfig(rows=2, cols=2, spad_kib=1, acc_kib=1)
    with pytest.raises(ValueError, match=r"^a program must end with HALT$"):
        ProgramModel(config).run([Preload(row=0, k=1, n=1)])
    assert ProgramModel(config).run(Program(config, (Halt(),)).instructions).total_cycles == 1
