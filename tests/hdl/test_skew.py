"""Skew and Deskew: element e of a vector leaves e (Skew) or count-1-e (Deskew) cycles late."""

import random

import pytest
from amaranth import Module, Signal, signed
from amaranth.lib import data
from amaranth.sim import Simulator

from systolic.hdl.skew import Deskew, Skew

from .streams import unpack_array


def _run(dut: Skew | Deskew, width: int, cycles: int, seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    count = dut.count
    stimulus = [[rng.randrange(-(1 << (width - 1)), 1 << (width - 1)) for _ in range(count)]
                for _ in range(cycles)]
    outputs: list[list[int]] = []

    async def testbench(ctx):  # type: ignore[no-untyped-def]
        mask = (1 << width) - 1
        for vector in stimulus:
            ctx.set(dut.i.as_value(), sum((v & mask) << (e * width) for e, v in enumerate(vector)))
            outputs.append(unpack_array(ctx.get(dut.o.as_value()), width, count))
            await ctx.tick()

    top = Module()  # a Skew of one element has no registers: give the sync domain a clock
    top.submodules.dut = dut
    ticks = Signal()
    top.d.sync += ticks.eq(~ticks)
    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return stimulus, outputs


@pytest.mark.parametrize("count", [1, 3, 6])
def test_skew_delays_element_e_by_e_cycles(count: int) -> None:
    stimulus, outputs = _run(Skew(signed(8), count), 8, 20, seed=count)
    for t in range(count, 20):
        assert outputs[t] == [stimulus[t - e][e] for e in range(count)]


@pytest.mark.parametrize("count", [1, 3, 6])
def test_deskew_delays_element_e_by_count_minus_1_minus_e_cycles(count: int) -> None:
    stimulus, outputs = _run(Deskew(signed(8), count), 8, 20, seed=count + 10)
    for t in range(count, 20):
        assert outputs[t] == [stimulus[t - (count - 1 - e)][e] for e in range(count)]


def test_skew_then_deskew_is_a_uniform_delay_of_count_minus_1() -> None:
    count, width = 4, 5
    chain = Module()
    chain.submodules.skew = skew = Skew(signed(width), count)
    chain.submodules.deskew = deskew = Deskew(signed(width), count)
    chain.d.comb += deskew.i.eq(skew.o)
    rng = random.Random(7)
    stimulus = [rng.getrandbits(width * count) for _ in range(30)]
    outputs: list[int] = []

    async def testbench(ctx):  # type: ignore[no-untyped-def]
        for bits in stimulus:
            ctx.set(skew.i.as_value(), bits)
            outputs.append(ctx.get(deskew.o.as_value()))
            await ctx.tick()

    sim = Simulator(chain)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert outputs[count - 1:] == stimulus[:len(stimulus) - (count - 1)]


def test_skew_carries_struct_elements_whole() -> None:
    layout = data.StructLayout({"data": signed(4), "flag": 1})
    stimulus, outputs = _run(Skew(layout, 3), layout.size, 12, seed=3)
    for t in range(3, 12):
        assert outputs[t] == [stimulus[t - e][e] for e in range(3)]


def test_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^count must be at least 1, not 0$"):
        Skew(signed(8), 0)
