"""execute_timing: hand-derived schedules and the back-to-back properties (RTL equality is
tested in tests/hdl/test_execute_unit.py)."""

import itertools
import random

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.isa.instructions import Compute, ComputeOS, Load, LoadTarget, Preload
from systolic.sim.timing.execute_timing import (
    _NEVER,
    ExecuteState,
    ExecuteTiming,
    InstructionTiming,
)


def config(rows: int, cols: int, dataflow: Dataflow) -> ArrayConfig:
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, spad_kib=1, acc_kib=1)


def test_ws_first_preload_and_compute_by_hand() -> None:
    # 2x3: the zero tile's beats are taken in cycles 1, 2 (issued 0, 1), the reset dummy row in 3.
    # PRELOAD: taken in 1 (the weight engine issues its last zero beat), a dummy closes the
    # reset tile; its beats issue in 2, 3 and are taken in 3 (the dummy's activation) and 4.
    # COMPUTE: taken in 2, waits in the slot until 3, issues from 4; its first row activates
    # the weights loaded in 4, so it is taken in 5, rows in 5, 6, 7; results 4 cycles later.
    model = ExecuteTiming(config(2, 3, Dataflow.WS))
    assert model.issue(Preload(row=0, k=2, n=3), 0) == InstructionTiming(1, 4)
    assert model.issue(Compute(in_row=0, m=3, acc_row=0), 0) == InstructionTiming(2, 11)


def test_os_chunks_by_hand() -> None:
    # 2x3 (dim 3): k = 4 is two chunks (3 + 1 columns). Chunk 0: rows read in 1, 2, columns
    # issued 4..6; chunk 1: rows read 3, 4, column issued 7, taken in 8 (the tile's end);
    # row 0 of the result 2*2 + 3 - 1 = 6 cycles later.
    model = ExecuteTiming(config(2, 3, Dataflow.OS))
    first = ComputeOS(in_row=0, m=2, n=3, k=4, wt_row=0, acc_row=0, a_stride=2)
    assert model.issue(first, 0) == InstructionTiming(0, 14)
    # Next tile: taken when the loader issues its last read (4); bank 0 is free from 6; its
    # column is issued in 8 but a tile end waits `rows` cycles after the previous one: 10.
    second = ComputeOS(in_row=8, m=1, n=1, k=1, wt_row=0, acc_row=4)
    assert model.issue(second, 0) == InstructionTiming(4, 16)


@pytest.mark.parametrize("rows,cols", [(1, 1), (2, 3), (4, 4), (8, 8), (16, 4)])
def test_ws_back_to_back_keeps_the_array_busy(rows: int, cols: int) -> None:
    rng = random.Random(rows * 100 + cols)
    model = ExecuteTiming(config(rows, cols, Dataflow.WS))
    sizes = [rng.randint(rows, rows + 5) for _ in range(10)]
    completions = []
    for m in sizes:
        model.issue(Preload(row=0, k=rng.randint(1, rows), n=rng.randint(1, cols)), 0)
        completions.append(model.issue(Compute(in_row=0, m=m, acc_row=0), 0).completed)
    assert [b - a for a, b in itertools.pairwise(completions)] == sizes[1:]


@pytest.mark.parametrize("rows,cols", [(1, 1), (2, 3), (4, 4), (8, 8)])
def test_ws_computes_without_preload_stream_back_to_back(rows: int, cols: int) -> None:
    model = ExecuteTiming(config(rows, cols, Dataflow.WS))
    times = [model.issue(Compute(in_row=0, m=1 + i % 3, acc_row=0), 0) for i in range(9)]
    assert [b.completed - a.completed for a, b in itertools.pairwise(times)] == [
        1 + i % 3 for i in range(1, 9)]


@pytest.mark.parametrize("rows,cols", [(1, 1), (2, 3), (4, 4), (8, 8)])
def test_os_tile_period_is_max_of_k_and_rows(rows: int, cols: int) -> None:
    dim = max(rows, cols)
    model = ExecuteTiming(config(rows, cols, Dataflow.OS))
    rng = random.Random(rows)
    ks = [rng.randint(1, dim) for _ in range(10)]  # one chunk each
    done = [model.issue(ComputeOS(in_row=0, m=1, n=1, k=k, wt_row=0, acc_row=0), 0).completed
            for k in ks]
    assert [b - a for a, b in itertools.pairwise(done)] == [max(k, rows) for k in ks[1:]]


def test_rejects_instructions_of_other_units_or_dataflows() -> None:
    ws = ExecuteTiming(config(2, 2, Dataflow.WS))
    with pytest.raises(ValueError, match=r"^COMPUTE.OS is not an EXECUTE instruction of a ws "
                                         r"array$"):
        ws.issue(ComputeOS(in_row=0, m=1, n=1, k=1, wt_row=0, acc_row=0), 0)
    with pytest.raises(ValueError, match=r"^LOAD is not an EXECUTE instruction of a ws array$"):
        ws.issue(Load.dense(LoadTarget.SPAD_IN, row=0, count=1, ext=0, row_stride=1, length=1), 0)


@pytest.mark.parametrize("dataflow", list(Dataflow))
def test_ready_from_is_the_take_cycle_of_an_early_offer(dataflow: Dataflow) -> None:
    # An instruction offered before the unit is ready is taken in the cycle ready_from gives,
    # and a copy of the schedule takes the same instructions at the same cycles.
    rng = random.Random(3)
    model = ExecuteTiming(config(3, 2, dataflow))
    for _ in range(60):
        if dataflow is Dataflow.OS:
            instr = ComputeOS(in_row=0, m=rng.randint(1, 4), n=1, k=rng.randint(1, 7),
                              wt_row=0, acc_row=0)
        elif rng.random() < 0.4:
            instr = Preload(row=0, k=rng.randint(1, 3), n=2)
        else:
            instr = Compute(in_row=0, m=rng.randint(1, 5), acc_row=0)
        ready = model.ready_from(type(instr))
        clone = model.copy()
        timing = model.issue(instr, 0)
        assert timing.taken == ready
        assert clone.issue(instr, 0) == timing
        if rng.random() < 0.3:  # offered late: taken then
            late = model.ready_from(type(instr)) + rng.randint(1, 5)
            assert model.issue(instr, late).taken == late


def test_state_after_reset_and_after_instructions() -> None:
    # 2x3 WS: the zero tile's beats issue in 0, 1 and are taken in 1, 2 (D = 2); the reset
    # dummy row issues in 0 and is taken in 3, activating it.
    ws = ExecuteTiming(config(2, 3, Dataflow.WS))
    assert ws.state() == ExecuteState(-1, 1, 2, 2, _NEVER, 0, 3, 3, -1, 0, 0, 0, 0, 0, 0, 0, 0)
    ws.issue(Preload(row=0, k=2, n=3), 0)  # taken 1, loaded 4 (test above)
    assert ws.state()[:4] == (1, 3, 4, 4) and ws.state().pending == 1
    os = ExecuteTiming(config(2, 3, Dataflow.OS))
    assert os.state() == ExecuteState(-1, *[0] * 10, *[_NEVER] * 5, 0)
    os.issue(ComputeOS(in_row=0, m=2, n=3, k=4, wt_row=0, acc_row=0, a_stride=2), 0)
    assert os.state() == ExecuteState(0, *[0] * 10, 4, 6, 7, 8, 8, 2)  # (test_os_chunks_by_hand)


def test_both_dataflows_drain_the_array_at_each_change_by_hand() -> None:
    # 2x3 BOTH after reset runs the WS zero tile: its weights are taken in 1, 2 (D = 2) and
    # its dummy row in 3 (T_last), so COMPUTE.OS waits for max(D + 1, T_last + L + 1) = 8
    # (L = 4). That tile (k 4 after reading m = 2 rows in 9, 10) streams from 12, its last
    # column taken in 15 + 1 = 16 and row 0 in 16 + 6 = 22: a COMPUTE is taken in 23.
    both = ExecuteTiming(config(2, 3, Dataflow.BOTH))
    assert both.state().both == 1 and both.state().mode_os == 0
    assert both.ready_from(ComputeOS) == 8
    tile = both.issue(ComputeOS(in_row=0, m=2, n=3, k=4, wt_row=0, acc_row=0), 0)
    assert tile == (8, 22) and both.state().mode_os == 1
    assert both.ready_from(Compute) == both.ready_from(Preload) == 23
    compute = both.issue(Compute(in_row=0, m=3, acc_row=0), 0)
    assert compute.taken == 23 and both.state().mode_os == 0
    # The same COMPUTE on a WS array: the unit's own rules, 23 cycles later.
    ws = ExecuteTiming(config(2, 3, Dataflow.WS))
    assert ws.issue(Compute(in_row=0, m=3, acc_row=0), 23) == compute
    assert ExecuteTiming(config(2, 3, Dataflow.WS)).state().both == 0
