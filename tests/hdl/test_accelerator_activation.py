"""The accelerator on random programs with issue 13's instructions (TABLE, STORE/COPY `lut`,
ADD `mul` and `b_broadcast`): memory bit-exact with the golden machine, every instruction's
accept/issue/complete cycle, the total and the counters equal to the cycle model's."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Add, Copy, Instruction, Store, Table
from systolic.sim.run.backends import run_program

from ..sim.verilator.conftest import needs_verilator
from ..support.random_programs import SyntheticProgram, random_program
from .accelerator_programs import golden_image, small_config
from .test_accelerator import check_times

WS, OS = Dataflow.WS, Dataflow.OS


def _new_features(instrs: tuple[Instruction, ...]) -> set[str]:
    """Return which of TABLE, lut (after a TABLE), mul and b_broadcast `instrs` use."""
    used = set()
    for instr in instrs:
        if isinstance(instr, Table):
            used.add("TABLE")
        if isinstance(instr, Store | Copy) and instr.lut:
            used.add("lut" if "TABLE" in used else "lut before TABLE")
        if isinstance(instr, Add):
            used.update(name for name in ("mul", "b_broadcast") if getattr(instr, name))
    return used


def activation_case(config: ArrayConfig, seed: int, *, limit: int = 60,
                    wanted: frozenset[str] = frozenset({"TABLE", "lut"})) -> SyntheticProgram:
    """Return the first random program (seeds from `seed`) of at most `limit` instructions
    that uses every feature in `wanted`."""
    for attempt in range(seed, seed + 500):
        case = random_program(config, np.random.default_rng(attempt), layers=3,
                              activation=True)
        instrs = case.program.instructions
        if len(instrs) <= limit and wanted <= _new_features(instrs):
            return case
    raise AssertionError(f"no program with {sorted(wanted)} from seed {seed}")


def assert_rtl_matches(case: SyntheticProgram) -> None:
    """RTL memory == golden memory; RTL times, total and counters == the cycle model's."""
    rtl = run_program(case.program, case.memory, backend="rtl", watchdog=200_000)
    model = run_program(case.program, case.memory, backend="model")
    assert bytes(rtl.memory) == golden_image(case.program, case.memory)
    check_times(case.program, rtl)
    assert rtl.times == model.times
    assert rtl.total_cycles == model.total_cycles
    assert dict(rtl.counters) == dict(model.counters)


@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize(("size", "wanted"), [
    (2, frozenset({"TABLE", "lut", "mul"})),
    (4, frozenset({"TABLE", "lut", "b_broadcast"})),
])
def test_random_activation_programs(size: int, wanted: frozenset[str], dataflow) -> None:
    config = small_config(size, size, dataflow, mem_latency=size - 1, bus_bytes=2 * size)
    assert_rtl_matches(activation_case(config, 100 * size + (dataflow is OS), wanted=wanted))


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize(("rows", "cols", "bus"), [(2, 2, 1), (4, 4, 8), (3, 5, 4), (8, 8, 16)])
@pytest.mark.parametrize("seed", range(4))
def test_more_random_activation_programs(rows: int, cols: int, bus: int, seed: int,
                                         dataflow) -> None:
    config = small_config(rows, cols, dataflow, mem_latency=seed * 3, bus_bytes=bus)
    case = activation_case(config, 1000 * seed + rows * cols, limit=120,
                           wanted=frozenset({"TABLE", "lut"}))
    assert_rtl_matches(case)


@pytest.mark.slow
def test_verilator_runs_table_and_lut_like_the_rtl() -> None:
    """The emitted Verilog under Verilator: same memory, times and counters as the Amaranth
    simulator on a program with TABLE, STORE lut, ADD mul and b_broadcast."""
    needs_verilator()
    config = small_config(4, 4, WS, mem_latency=3, bus_bytes=8, spad_kib=8, acc_kib=8)
    case = activation_case(config, 7, wanted=frozenset({"TABLE", "lut", "mul", "b_broadcast"}))
    rtl = run_program(case.program, case.memory, backend="rtl")
    fast = run_program(case.program, case.memory, backend="verilator")
    assert (fast.times, fast.total_cycles) == (rtl.times, rtl.total_cycles)
    assert dict(fast.counters) == dict(rtl.counters)
    assert bytes(fast.memory) == bytes(rtl.memory) == golden_image(case.program, case.memory)
