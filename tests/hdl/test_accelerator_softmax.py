"""The accelerator on random programs with SOFTMAX, TABLE `wide` and STORE `raw` (issue 13):
memory bit-exact with the golden machine, every instruction's accept/issue/complete cycle, the
total and the counters equal to the cycle model's."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Instruction, Softmax, Store, Table
from systolic.sim.run.backends import run_program

from ..sim.verilator.conftest import needs_verilator
from ..support.random_programs import SyntheticProgram, random_program
from .accelerator_programs import golden_image, small_config
from .test_accelerator_activation import assert_rtl_matches

WS, OS = Dataflow.WS, Dataflow.OS
WANTED = frozenset({"SOFTMAX", "TABLE wide", "raw"})


def _softmax_features(instrs: tuple[Instruction, ...]) -> set[str]:
    """Return which of SOFTMAX (after a wide TABLE), TABLE wide and STORE raw `instrs` use."""
    used = set()
    for instr in instrs:
        if isinstance(instr, Table) and instr.wide:
            used.add("TABLE wide")
        if isinstance(instr, Softmax):
            used.add("SOFTMAX" if "TABLE wide" in used else "SOFTMAX before TABLE")
        if isinstance(instr, Store) and instr.raw:
            used.add("raw")
    return used


def softmax_case(config: ArrayConfig, seed: int, *, limit: int = 50,
                 wanted: frozenset[str] = WANTED) -> SyntheticProgram:
    """Return the first random program (seeds from `seed`) of at most `limit` instructions
    that uses every feature in `wanted`."""
    for attempt in range(seed, seed + 500):
        case = random_program(config, np.random.default_rng(attempt), layers=3,
                              activation=True, softmax=True)
        instrs = case.program.instructions
        if len(instrs) <= limit and wanted <= _softmax_features(instrs):
            return case
    raise AssertionError(f"no program with {sorted(wanted)} from seed {seed}")


@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize("size", [2, 4])
def test_random_softmax_programs(size: int, dataflow) -> None:
    config = small_config(size, size, dataflow, mem_latency=size - 1, bus_bytes=2 * size)
    assert_rtl_matches(softmax_case(config, 300 * size + (dataflow is OS)))


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", [WS, OS])
@pytest.mark.parametrize(("rows", "cols", "bus"), [(2, 2, 1), (4, 4, 8), (8, 8, 16)])
@pytest.mark.parametrize("seed", range(3))
def test_more_random_softmax_programs(rows: int, cols: int, bus: int, seed: int,
                                      dataflow) -> None:
    config = small_config(rows, cols, dataflow, mem_latency=seed * 3, bus_bytes=bus)
    assert_rtl_matches(softmax_case(config, 2000 * seed + rows * cols, limit=120,
                                    wanted=frozenset({"SOFTMAX"})))


@pytest.mark.slow
def test_verilator_runs_softmax_like_the_rtl() -> None:
    """The emitted Verilog under Verilator: same memory, times and counters as the Amaranth
    simulator on a program with TABLE wide, SOFTMAX and STORE raw."""
    needs_verilator()
    config = small_config(4, 4, WS, mem_latency=3, bus_bytes=8, spad_kib=8, acc_kib=8)
    case = softmax_case(config, 11)
    rtl = run_program(case.program, case.memory, backend="rtl")
    fast = run_program(case.program, case.memory, backend="verilator")
    assert (fast.times, fast.total_cycles) == (rtl.times, rtl.total_cycles)
    assert dict(fast.counters) == dict(rtl.counters)
    assert bytes(fast.memory) == bytes(rtl.memory) == golden_image(case.program, case.memory)
