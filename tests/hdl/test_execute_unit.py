"""ExecuteUnit: results equal the golden machine, cycles equal `execute_timing`, exactly."""

import itertools
import random

import numpy as np
import pytest
from amaranth.back import verilog

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.execute_unit import ExecuteUnit
from systolic.isa.instructions import Compute, ComputeOS, Instruction, Preload
from systolic.sim.timing.execute_timing import ExecuteTiming

from .execute_harness import random_program, random_state, run_golden, run_rtl

SIZES = [(1, 1), (2, 3), (4, 4), (8, 8)]


def small_config(rows: int, cols: int, dataflow: Dataflow, **kw: int) -> ArrayConfig:
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, spad_kib=1, acc_kib=1, **kw)


def check_program(config: ArrayConfig, seed: int, program: list[Instruction],
                  available: list[int], ready_probability: float = 1.0) -> list[int]:
    """Run `program`; require golden results and (always-ready) model cycles; return completions."""
    spad_in, spad_wt = random_state(config, np.random.default_rng(seed))
    run = run_rtl(config, spad_in, spad_wt, program, available, ready_probability)
    np.testing.assert_array_equal(run.acc, run_golden(config, spad_in, spad_wt, program))
    if ready_probability == 1.0:
        model = ExecuteTiming(config)
        expected = [model.issue(instr, cycle) for instr, cycle in zip(program, available)]
        assert run.taken == [t.taken for t in expected]
        assert run.completed == [t.completed for t in expected]
    return run.completed


def check(config: ArrayConfig, seed: int, count: int, **kw: int) -> None:
    program, available = random_program(config, random.Random(seed), count, **kw)
    check_program(config, seed, program, available)


@pytest.mark.parametrize("rows,cols", SIZES)
@pytest.mark.parametrize("seed", [1, 2])
def test_ws_random_programs(rows: int, cols: int, seed: int) -> None:
    check(small_config(rows, cols, Dataflow.WS), seed, 30)


@pytest.mark.parametrize("rows,cols", SIZES)
def test_ws_back_to_back(rows: int, cols: int) -> None:
    check(small_config(rows, cols, Dataflow.WS), 7, 30, gap=0)


@pytest.mark.parametrize("rows,cols", SIZES)
@pytest.mark.parametrize("seed", [1, 2])
def test_os_random_programs(rows: int, cols: int, seed: int) -> None:
    check(small_config(rows, cols, Dataflow.OS), seed, 20)


@pytest.mark.parametrize("rows,cols", SIZES)
def test_os_back_to_back(rows: int, cols: int) -> None:
    check(small_config(rows, cols, Dataflow.OS), 7, 20, gap=0)


@pytest.mark.parametrize(("rows", "cols", "seed"), [
    (2, 2, 1), (4, 4, 2), pytest.param(1, 1, 2, marks=pytest.mark.slow),
    pytest.param(2, 3, 3, marks=pytest.mark.slow), pytest.param(8, 8, 1, marks=pytest.mark.slow)])
def test_both_dataflows_random_programs(rows: int, cols: int, seed: int) -> None:
    """`Dataflow.BOTH`: runs of PRELOAD/COMPUTE and COMPUTE.OS in one program; at each change
    the unit drains the array first (`ExecuteTiming`'s switch rule), cycle for cycle."""
    program, available = random_program(small_config(rows, cols, Dataflow.BOTH),
                                        random.Random(seed), 30)
    assert {type(i) for i in program} == {Preload, Compute, ComputeOS}
    check_program(small_config(rows, cols, Dataflow.BOTH), seed, program, available)


@pytest.mark.parametrize("gap", [0, 6])
def test_both_dataflows_back_to_back_and_backpressure(gap: int) -> None:
    config = small_config(4, 4, Dataflow.BOTH)
    program, available = random_program(config, random.Random(7), 24, gap=gap)
    check_program(config, 7, program, available, ready_probability=1.0 if gap else 0.6)


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_long_tiles(dataflow: Dataflow) -> None:
    """A few hundred rows (WS `m`) or k steps (OS `k`) per instruction."""
    config = ArrayConfig(rows=4, cols=4, dataflow=dataflow, spad_kib=8, acc_kib=8)
    check(config, 3, 8, max_m=300)


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
def test_accumulator_backpressure(dataflow: Dataflow) -> None:
    config = small_config(4, 4, dataflow)
    program, available = random_program(config, random.Random(5), 16)
    check_program(config, 5, program, available, ready_probability=0.6)


@pytest.mark.parametrize("rows,cols", [(2, 3), (4, 4), (8, 8)])
def test_ws_no_idle_array_cycles(rows: int, cols: int) -> None:
    """PRELOAD, COMPUTE, ... back to back: each COMPUTE completes `m` cycles after the previous."""
    config = small_config(rows, cols, Dataflow.WS)
    rng = random.Random(rows)
    program: list[Instruction] = []
    sizes = [rng.randint(rows, rows + 3) for _ in range(6)]
    for index, m in enumerate(sizes):
        program.append(Preload(row=rng.randint(0, 60 - rows), k=rows, n=cols))
        program.append(Compute(in_row=index * 8, m=m, acc_row=0, accumulate=index > 0))
    completed = check_program(config, 1, program, [0] * len(program))
    computes = completed[1::2]
    assert [b - a for a, b in itertools.pairwise(computes)] == sizes[1:]


@pytest.mark.parametrize("rows,cols", [(2, 3), (4, 4), (8, 8)])
def test_os_no_idle_array_cycles(rows: int, cols: int) -> None:
    """COMPUTE.OS tiles with k >= rows back to back: each completes `k` cycles after the last.

    (Every k-chunk is at least `m = rows` wide: a chunk streams while the next one loads.)
    """
    config = small_config(rows, cols, Dataflow.OS)
    dim = config.dim
    rng = random.Random(rows)
    ks = [rng.choice([rng.randint(rows, dim), rng.randint(dim + rows, 2 * dim)]) for _ in range(6)]
    program: list[Instruction] = [
        ComputeOS(in_row=(index % 3) * 2 * rows, m=rows, n=cols, k=k, wt_row=0, acc_row=rows * (index % 3),
                  a_stride=0 if k <= dim else rows)
        for index, k in enumerate(ks)]
    completed = check_program(config, 1, program, [0] * len(program))
    assert [b - a for a, b in itertools.pairwise(completed)] == ks[1:]


def test_rejects_a_non_config() -> None:
    with pytest.raises(TypeError, match=r"^config must be an ArrayConfig, not 3$"):
        ExecuteUnit(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("dataflow", list(Dataflow))
def test_verilog_conversion(dataflow: Dataflow) -> None:
    text = verilog.convert(ExecuteUnit(small_config(2, 3, dataflow)), name="execute_unit")
    assert "module execute_unit" in text
