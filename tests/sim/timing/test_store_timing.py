"""store_timing's closed form against a cycle-stepped model of the reader/writer pipeline.

The RTL itself is checked against `duration` in tests/hdl/test_store_unit.py; here the formula
is compared with an independent step-by-step recursion (row j reaches the writer when the
reader has finished it plus the datapath latency; the writer starts a row when both the row
and the writer are free), and with hand-computed examples.
"""

import dataclasses

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.isa.instructions import Add, Compute, Copy, Pool, PoolMode, Softmax, Store, Table
from systolic.sim.timing.dispatch_model import UnitTiming
from systolic.sim.timing.store_timing import (
    duration,
    duration_timing,
    fixed_cycles,
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
    return writer_free + fixed_cycles(instr)


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
    assert duration(store, CONFIG) == 1 + 9 + 9
    assert unit_timing(store, CONFIG) == UnitTiming(busy=20, latency=19)
    assert duration_timing(17) == UnitTiming(busy=18, latency=17)


def test_copy_and_add() -> None:
    copy = Copy(in_row=0, m=4, lanes=4, ext=1001, n0=1, row_stride1=9)
    assert duration(copy, CONFIG) == 1 + 7 + 3
    add = Add(a_row=0, b_row=4, m=3, lanes=2, multiplier_a=1, multiplier_b=1, shift=0,
              zp_a=0, zp_b=0, zp_out=0, lo=-128, hi=127, ext=0, n0=1, row_stride1=4)
    assert reader_cycles(add) == [2, 2, 2]
    assert duration(add, CONFIG) == 6 + 1 + 10  # reader-bound: the last row's single beat


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
        flags = {name: bool(rng.integers(2)) for name in ("lut", "mul", "b_broadcast")}
        for instr in (
            Copy(in_row=0, m=m, lanes=lanes, lut=flags["lut"], **pattern),
            Add(a_row=0, b_row=0, m=m, lanes=lanes, multiplier_a=1, multiplier_b=0, shift=0,
                zp_a=0, zp_b=0, zp_out=0, lo=-128, hi=127, mul=flags["mul"],
                b_broadcast=flags["b_broadcast"], **pattern),
        ):
            assert duration(instr, CONFIG) == stepped(instr, CONFIG)


def test_lut_adds_one_pipeline_stage_and_mul_two() -> None:
    # docs/isa.md: K is 10 for STORE with lut (9), 4 for COPY with lut (3), 12 for ADD with mul
    # (10); b_broadcast changes nothing (operand b's row is read again for every output row).
    store = Store(acc_row=0, m=3, n=2, param_row=0, zero_point=0, lo=-128, hi=127, ext=5)
    copy = Copy(in_row=0, m=3, lanes=2, ext=5)
    add = Add(a_row=0, b_row=4, m=3, lanes=2, multiplier_a=1, multiplier_b=0, shift=0,
              zp_a=0, zp_b=0, zp_out=0, lo=-128, hi=127, ext=5)
    for instr, plain, lut in ((store, 9, 10), (copy, 3, 4)):
        flagged = dataclasses.replace(instr, lut=True)
        assert (fixed_cycles(instr), fixed_cycles(flagged)) == (plain, lut)
        assert duration(flagged, CONFIG) == duration(instr, CONFIG) + 1
    mul = dataclasses.replace(add, mul=True)
    assert (fixed_cycles(add), fixed_cycles(mul)) == (10, 12)
    assert duration(mul, CONFIG) == duration(add, CONFIG) + 2
    broadcast = dataclasses.replace(mul, b_broadcast=True)
    assert duration(broadcast, CONFIG) == duration(mul, CONFIG)
    assert reader_cycles(broadcast) == [2, 2, 2]


@pytest.mark.parametrize(("rows", "cols", "table_rows"),
                         [(4, 4, 64), (8, 8, 32), (3, 5, 52), (16, 16, 16), (1, 1, 256)])
def test_table_reads_its_rows_and_takes_two_more_cycles(rows: int, cols: int,
                                                        table_rows: int) -> None:
    config = ArrayConfig(rows=rows, cols=cols)
    assert duration(Table(row=3), config) == table_rows + 2
    assert unit_timing(Table(row=3), config) == UnitTiming(busy=table_rows + 3,
                                                           latency=table_rows + 2)


@pytest.mark.parametrize(("rows", "cols", "wide_rows"),
                         [(4, 4, 128), (8, 8, 64), (3, 5, 103), (16, 16, 32), (1, 1, 512)])
def test_table_wide_reads_ceil_512_over_dim_rows(rows: int, cols: int, wide_rows: int) -> None:
    config = ArrayConfig(rows=rows, cols=cols)
    assert duration(Table(row=3, wide=True), config) == wide_rows + 2


def test_store_raw_writes_rows_of_four_bytes_per_lane() -> None:
    # rows of 12 bytes at 101, 118, 135 on a 4-byte bus: 101..112 is 4 beats, 118..129 4,
    # 135..146 4; K stays 9
    store = Store(acc_row=0, m=3, n=3, param_row=0, zero_point=0, lo=0, hi=0, ext=101,
                  row_stride1=17, raw=True)
    assert row_beats(store, CONFIG) == [4, 4, 4]
    assert duration(store, CONFIG) == 1 + 12 + 9 == stepped(store, CONFIG)
    wide = dataclasses.replace(CONFIG, input_width=16)  # (4-byte rows whatever operand_bytes)
    assert row_beats(store, wide) == [4, 4, 4]
    plain = dataclasses.replace(store, raw=False)
    assert row_beats(plain, CONFIG) == [1, 2, 2]  # (3-byte rows: 118..120, 135..137 straddle)


def softmax_stepped(instr: Softmax, config: ArrayConfig) -> int:
    """SOFTMAX by rows: each row's three passes over its C spad rows, 40 cycles, then its
    writes (whole beats of the bus it touches), one row after the other, 3 cycles to finish."""
    chunks = -(-instr.length // config.dim)
    cycle = 0
    for i in range(instr.m):
        base = instr.ext + i // instr.n0 * instr.row_stride1 + i % instr.n0 * instr.row_stride0
        last = base + instr.length * config.operand_bytes - 1
        cycle += 3 * chunks + 40 + (last // config.bus_bytes - base // config.bus_bytes + 1)
    return cycle + 3


def _softmax(**fields: object) -> Softmax:
    values: dict[str, object] = {"in_row": 0, "m": 3, "length": 6, "multiplier": 1 << 30,
                                 "shift": 6, "zero_point": -128, "lo": -128, "hi": 127,
                                 "ext": 2, "row_stride1": 7}
    values.update(fields)
    return Softmax(**values)  # type: ignore[arg-type]


def test_softmax_is_a_sum_over_rows() -> None:
    # dim 4, C = 2; rows of 6 bytes at 2, 9, 16 on a 4-byte bus: 2 beats each
    softmax = _softmax()
    assert row_beats(softmax, CONFIG) == [2, 2, 2]
    assert duration(softmax, CONFIG) == 3 * (3 * 2 + 40 + 2) + 3
    assert unit_timing(softmax, CONFIG) == UnitTiming(busy=148, latency=147)
    assert duration(dataclasses.replace(softmax, flip_sign=True, multiplier=-5, shift=-31,
                                        zero_point=9, lo=0, hi=9), CONFIG) == 147


@pytest.mark.parametrize("seed", range(6))
def test_softmax_duration_equals_the_row_by_row_count(seed: int) -> None:
    rng = np.random.default_rng(seed)
    config = ArrayConfig(rows=int(rng.integers(1, 9)), cols=int(rng.integers(1, 9)),
                         bus_bytes=int(2 ** rng.integers(0, 6)))
    for _ in range(20):
        softmax = _softmax(m=int(rng.integers(1, 6)), length=int(rng.integers(1, 40)),
                           ext=int(rng.integers(0, 200)), n0=int(rng.integers(1, 3)),
                           row_stride0=int(rng.integers(-50, 50)) + 100,
                           row_stride1=int(rng.integers(0, 300)) + 300)
        assert duration(softmax, config) == softmax_stepped(softmax, config)


def test_other_units_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"^the STORE unit does not execute COMPUTE$"):
        duration(Compute(in_row=0, m=1, acc_row=0), CONFIG)
