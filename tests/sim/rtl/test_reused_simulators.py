"""Kept simulators: built once per key, the oldest dropped, reset between runs, forgotten after
a run that raised."""

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from systolic.sim.rtl.reused_simulators import KeptDesigns, ResetBeforeRun


class Counter:
    """A counter from 0 and a testbench reading it for `cycles` cycles (per run)."""

    def __init__(self) -> None:
        self.count = Signal(8)
        m = Module()
        m.d.sync += self.count.eq(self.count + 1)
        self.cycles, self.seen = 3, []
        sim = Simulator(m)
        sim.add_clock(1e-6)
        sim.add_testbench(self._bench)
        self.runner = ResetBeforeRun(sim)

    async def _bench(self, ctx) -> None:
        self.seen = []
        for _ in range(self.cycles):
            await ctx.tick()
            self.seen.append(ctx.get(self.count))
        if self.cycles > 5:
            raise RuntimeError("too long")


def test_each_run_starts_from_the_initial_state() -> None:
    kept: KeptDesigns[Counter] = KeptDesigns(2)
    counter = kept.get("a", Counter)
    kept.run("a", counter)
    first = list(counter.seen)
    counter.cycles = 5
    kept.run("a", counter)
    assert first == [1, 2, 3] and counter.seen == [1, 2, 3, 4, 5]


def test_the_oldest_is_dropped_and_a_failed_run_forgotten() -> None:
    kept: KeptDesigns[Counter] = KeptDesigns(2)

    def use(key: str) -> Counter:  # every harness built is run (its testbench then started)
        harness = kept.get(key, Counter)
        kept.run(key, harness)
        return harness

    a, b = use("a"), use("b")
    assert use("a") is a  # a is now the newest
    use("c")  # drops b
    assert use("a") is a and use("b") is not b  # b built again, c dropped
    a = use("a")
    a.cycles = 6
    with pytest.raises(RuntimeError, match="too long"):
        kept.run("a", a)
    assert use("a") is not a
