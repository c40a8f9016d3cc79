"""`load_timing`: beats from the segment arithmetic, setup and memory latency added exactly.

The RTL's cycles are compared with these functions in tests/hdl/test_load_unit.py; here the
formulas are checked against hand-counted beats.
"""

import pytest

from systolic.config import ArrayConfig
from systolic.isa.instructions import Load, LoadTarget
from systolic.sim.timing.dispatch_model import UnitTiming
from systolic.sim.timing.load_timing import (
    SETUP_CYCLES,
    beats_timing,
    load_beats,
    load_duration,
    load_timing,
)

CONFIG = ArrayConfig(rows=4, cols=4, bus_bytes=16, spad_kib=4, acc_kib=4)


def test_dense_rows_count_their_aligned_beats() -> None:
    # Rows of 4 bytes at 14, 24 and 34 cover beats 0-1, 1 and 2 of a 16-byte bus.
    instr = Load.dense(LoadTarget.SPAD_IN, 0, 3, 14, 10, 4)
    assert load_beats(instr, CONFIG) == 2 + 1 + 1
    assert load_duration(instr, CONFIG, 8) == 4 + 8 + SETUP_CYCLES


def test_gathered_row_counts_each_segment() -> None:
    # Elements k = 0..3 with run 1, n_mid 2, stride_mid 16, stride_outer 64: offsets 0, 16, 64,
    # 80; every element its own segment and its own beat.
    instr = Load(LoadTarget.SPAD_WT, 0, 2, 0, n0=1, row_stride1=200, length=4, run=1, n_mid=2,
                 stride_mid=16, stride_outer=64)
    assert load_beats(instr, CONFIG) == 2 * 4


def test_params_row_is_one_segment() -> None:
    instr = Load.params(3, 2, 8, 36)  # 36-byte rows at 8 and 44: beats 0..2 and 2..4
    assert load_beats(instr, CONFIG) == 3 + 3


@pytest.mark.parametrize(("beats_rows", "busy"), [(1, 2), (2, 2), (5, 5)])
def test_unit_timing(beats_rows: int, busy: int) -> None:
    instr = Load.dense(LoadTarget.SPAD_IN, 0, beats_rows, 0, 16, 4)  # one beat per row
    assert load_timing(instr, CONFIG, 20) == UnitTiming(
        busy=busy, latency=beats_rows + 20 + SETUP_CYCLES
    )
    assert beats_timing(beats_rows, 20) == load_timing(instr, CONFIG, 20)
