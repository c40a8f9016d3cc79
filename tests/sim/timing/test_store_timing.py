"""store_timing's closed form against a cycle-stepped model of the reader/writer pipeline.

The RTL itself is checked against `duration` in tests/hdl/test_store_unit.py; here the formula
is compared with an independent step-by-step recursion (row j reaches the writer when the
reader has finished it plus the datapath latency; the writer starts a row when both the row
and the writer are free), and with hand-computed examples.
"""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.instructions import Add, Compute, Copy, Pool, PoolMode, Store
from systolic.sim.timing.dispatch_model import UnitTiming
from systolic.sim.timing.store_timing import (
    FIXED_CYCLES,
    duration,
    duration_timing,
    reader_cycles,
    row_beats,
    unit_timing,
)

CONFIG = ArrayConfig(rows=4, cols=4, spad_kib=4, acc_kib=4, bus_bytes=4)


def stepped(instr, config: ArrayConfig) -> int:
    """Return the duration by stepping rows through reader, datapath and writer."""
    reader_done, writer_free = 0, 0
    for cost, beats in zip(reader_cycles(instr), row_beats(instr, config), strict=True):
        reader_done += cost
        writer_free = max(writer_free, reader_done) + beats
    return writer_free + FIXED_CYCLES[type(instr)]


def window_counts(instr: Pool) -> list[int]:
    """Count each output's window elements inside the tile by enumeration."""
    counts = []
    for oy in range(instr.oh):
        for ox in range(instr.ow):
            counts.append(sum(
                1
                for dy in range(instr.kh) for dx in range(instr.kw)
                if 0 <= oy * instr.sh - instr.pad_top + dy < instr.h
                and 0 <= ox * instr.sw - instr.pad_left + dx < instr.w))
    return counts


def test_store_is_sum_of_beats() -> None:
    # rows at 101, 106, 118, 123, 135 of 3 bytes on a 4-byte bus: 1 + 2 + 2 + 2 + 2 beats
    store = Store(acc_row=3, m=5, n=3, param_row=7, zero_point=3, lo=-100, hi=100, ext=101,
                  n0=2, row_stride0=5, row_stride1=17)
    assert row_beats(store, CONFIG) == [1, 2, 2, 2, 2]
    assert duration(store, CONFIG) == 1 + 9 + 7
    assert unit_timing(store, CONFIG) == UnitTiming(busy=18, latency=17)
    assert duration_timing(17) == UnitTiming(busy=18, latency=17)


def test_copy_and_add() -> None:
    copy = Copy(in_row=0, m=4, lanes=4, ext=1001, n0=1, row_stride1=9)
    assert duration(copy, CONFIG) == 1 + 7 + 3
    add = Add(a_row=0, b_row=4, m=3, lanes=2, multiplier_a=1, multiplier_b=1, shift=0,
              zp_a=0, zp_b=0, zp_out=0, lo=-128, hi=127, ext=0, n0=1, row_stride1=4)
    assert reader_cycles(add) == [2, 2, 2]
    assert duration(add, CONFIG) == 6 + 1 + 8  # reader-bound: the last row's single beat


@pytest.mark.parametrize("seed", range(5))
def test_pool_windows_and_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(40):
        h, w = (int(v) for v in rng.integers(1, 9, 2))
        kh, kw = int(rng.integers(1, h + 2)), int(rng.integers(1, w + 2))
        sh, sw = (int(v) for v in rng.integers(1, 4, 2))
        pad_top, pad_left = int(rng.integers(-(h - 1), kh)), int(rng.integers(-(w - 1), kw))
        oh = max(1, (h - 1 + pad_top) // sh + 1)
        ow = max(1, (w - 1 + pad_left) // sw + 1)
        pool = Pool(mode=PoolMode.MAX, in_row=0, lanes=int(rng.integers(1, 5)), h=h, w=w,
                    kh=kh, kw=kw, sh=sh, sw=sw, pad_top=pad_top, pad_left=pad_left, oh=oh,
                    ow=ow, lo=-128, hi=127, ext=int(rng.integers(0, 64)),
                    n0=int(rng.integers(1, 4)), row_stride0=int(rng.integers(0, 9)),
                    row_stride1=int(rng.integers(0, 40)))
        assert reader_cycles(pool) == window_counts(pool)
        assert duration(pool, CONFIG) == stepped(pool, CONFIG)


@pytest.mark.parametrize("seed", range(3))
def test_random_rows_match_stepped_model(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    for _ in range(30):
        m = int(rng.integers(1, 50))
        pattern = {"ext": int(rng.integers(0, 100)), "n0": int(rng.integers(1, 5)),
                   "row_stride0": int(rng.integers(0, 12)),
                   "row_stride1": int(rng.integers(0, 60))}
        lanes = int(rng.integers(1, 5))
        for instr in (
            Copy(in_row=0, m=m, lanes=lanes, **pattern),
            Add(a_row=0, b_row=0, m=m, lanes=lanes, multiplier_a=1, multiplier_b=1, shift=0,
                zp_a=0, zp_b=0, zp_out=0, lo=-128, hi=127, **pattern),
        ):
            assert duration(instr, CONFIG) == stepped(instr, CONFIG)


def test_other_units_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"^the STORE unit does not execute COMPUTE$"):
        duration(Compute(in_row=0, m=1, acc_row=0), CONFIG)
