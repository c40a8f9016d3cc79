"""`EventCounters`: sums of per-cycle increments while enabled, cleared by `i_clear` (which wins),
registered outputs; the increments' shapes follow `event_increments`."""

import pytest
from amaranth.sim import Simulator

from systolic.config import ArrayConfig
from systolic.hdl.event_counters import (
    RTL_EVENTS,
    EventCounters,
    event_increments,
)


def test_counters_sum_enabled_increments_and_clear() -> None:
    dut = EventCounters({"beats": 1, "bytes": 8}, width=6)
    steps = [  # (clear, enable, beats, bytes) of each cycle
        (0, 1, 1, 5), (0, 0, 1, 7), (0, 1, 1, 8), (1, 1, 1, 8), (0, 1, 0, 3),
        (0, 1, 1, 8), (0, 1, 1, 8), (0, 1, 1, 8), (0, 1, 1, 8), (0, 1, 1, 8), (0, 1, 1, 8),
        (0, 1, 1, 8), (0, 1, 1, 8), (0, 1, 1, 8),
    ]  # fmt: skip
    seen: list[tuple[int, int]] = []

    async def bench(ctx) -> None:
        for clear, enable, beats, nbytes in steps:
            ctx.set(dut.i_clear, clear)
            ctx.set(dut.i_enable, enable)
            ctx.set(dut.i_inc.beats, beats)
            ctx.set(dut.i_inc.bytes, nbytes)
            await ctx.tick()
            seen.append((ctx.get(dut.counts.beats), ctx.get(dut.counts.bytes)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    expected, beats, nbytes = [], 0, 0
    for clear, enable, b, n in steps:
        if clear:
            beats = nbytes = 0
        elif enable:
            beats, nbytes = (beats + b) % 64, (nbytes + n) % 64  # 6-bit counters wrap
        expected.append((beats, nbytes))
    assert seen == expected
    assert seen[2] == (2, 13) and seen[3] == (0, 0) and seen[-1][1] == (3 + 8 * 9) % 64


def test_increments_cover_every_rtl_event() -> None:
    config = ArrayConfig(rows=4, cols=8, bus_bytes=16)
    increments = event_increments(config)
    assert tuple(increments) == RTL_EVENTS
    assert increments["mac_slots"] == increments["macs"] == 32
    assert increments["ext_read_bytes"] == increments["ext_write_bytes"] == 16
    assert increments["spad_in_reads"] == 2
    assert increments["output_stage_lanes"] == 8
    assert increments["vector_lanes"] == increments["lut_writes"] == 8  # dim
    dut = EventCounters(increments)
    dut._MustUse__silence = True  # only its ports are looked at
    assert len(dut.counts.macs) == 48
    assert len(dut.i_inc.macs) == 6


@pytest.mark.parametrize("increments", [{}, {"macs": 0}])
def test_bad_increments_are_refused(increments: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="increments"):
        EventCounters(increments)
