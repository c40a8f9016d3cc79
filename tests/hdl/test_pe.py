"""Processing elements against a cycle-by-cycle Python model, including wrap-around."""

import random

import pytest
from amaranth.lib import wiring
from amaranth.sim import Simulator

from systolic.hdl.pe import OutputStationaryPE, WeightStationaryPE


def wrap(value: int, width: int) -> int:
    """Return `value` modulo 2**width as a signed two's-complement number."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _simulate(dut: wiring.Component, inputs: dict, stimulus: list[dict],
              outputs: dict) -> list[dict]:
    """Apply one dict of input values (by name in `inputs`) per cycle; return the outputs
    (by name in `outputs`) seen after each edge."""
    seen: list[dict] = []

    async def testbench(ctx):  # type: ignore[no-untyped-def]
        for values in stimulus:
            for name, value in values.items():
                ctx.set(inputs[name], value)
            await ctx.tick()
            seen.append({name: ctx.get(port) for name, port in outputs.items()})

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return seen


def _random_operand(rng: random.Random, width: int) -> int:
    # Extreme values a third of the time: they make the largest products and the wrap-arounds.
    if rng.random() < 0.33:
        return rng.choice([-(1 << (width - 1)), (1 << (width - 1)) - 1])
    return rng.randrange(-(1 << (width - 1)), 1 << (width - 1))


@pytest.mark.parametrize("acc_width", [16, 32])
def test_weight_stationary_pe_matches_model(acc_width: int) -> None:
    rng = random.Random(acc_width)
    row, rows = 2, 4
    dut = WeightStationaryPE(row=row, input_width=8, weight_width=8, acc_width=acc_width,
                             rows=rows)
    stimulus = [{
        "a": _random_operand(rng, 8), "flip": int(rng.random() < 0.2),
        "psum": _random_operand(rng, acc_width), "valid": int(rng.random() < 0.5),
        "row": rng.randrange(rows), "data": _random_operand(rng, 8),
    } for _ in range(300)]
    inputs = {"a": dut.i_a.data, "flip": dut.i_a.flip, "psum": dut.i_psum,
              "valid": dut.i_lane.valid, "row": dut.i_lane.row, "data": dut.i_lane.data}
    seen = _simulate(dut, inputs, stimulus, {
        "a": dut.o_a.data, "flip": dut.o_a.flip, "psum": dut.o_psum, "valid": dut.o_lane.valid,
        "row": dut.o_lane.row, "data": dut.o_lane.data})
    active = shadow = 0
    wrapped = 0
    for cycle, values in enumerate(stimulus):
        a, flip, psum = values["a"], values["flip"], values["psum"]
        weight = shadow if flip else active
        expected_psum = wrap(psum + a * weight, acc_width)
        wrapped += expected_psum != psum + a * weight
        assert seen[cycle] == {**values, "psum": expected_psum}, f"cycle {cycle}"
        if flip:
            active = shadow
        if values["valid"] and values["row"] == row:
            shadow = values["data"]
    if acc_width == 16:
        assert wrapped > 10  # the narrow accumulator really wrapped around


def _os_inputs(dut: OutputStationaryPE) -> dict:
    return {"a": dut.i_a.data, "last": dut.i_a.last, "b": dut.i_b, "drain": dut.i_drain}


@pytest.mark.parametrize("acc_width", [16, 32])
def test_output_stationary_pe_matches_model(acc_width: int) -> None:
    rng = random.Random(acc_width + 1)
    dut = OutputStationaryPE(input_width=8, weight_width=8, acc_width=acc_width)
    stimulus = [{
        "a": _random_operand(rng, 8), "last": int(rng.random() < 0.1),
        "b": _random_operand(rng, 8), "drain": _random_operand(rng, acc_width),
    } for _ in range(300)]
    seen = _simulate(dut, _os_inputs(dut), stimulus, {
        "a": dut.o_a.data, "last": dut.o_a.last, "b": dut.o_b, "drain": dut.o_drain})
    acc = result = exact = 0
    wrapped = 0
    for cycle, values in enumerate(stimulus):
        a, last, b = values["a"], values["last"], values["b"]
        assert seen[cycle] == {"a": a, "last": last, "b": b, "drain": result}, f"cycle {cycle}"
        total = wrap(acc + a * b, acc_width)
        exact += a * b
        if last:
            wrapped += total != exact
            result, acc, exact = total, 0, 0
        else:
            result, acc = values["drain"], total
    if acc_width == 16:
        assert wrapped > 3  # some tile sums wrapped around


def test_output_stationary_pe_extreme_products_sum_exactly() -> None:
    # 100 products of -128 * -128 = 1,638,400, well inside 32 bits.
    dut = OutputStationaryPE(input_width=8, weight_width=8, acc_width=32)
    stimulus = [{"a": -128, "last": int(k == 99), "b": -128, "drain": 0}
                for k in range(100)] + [{"last": 0, "a": 0}] * 2
    seen = _simulate(dut, _os_inputs(dut), stimulus, {"drain": dut.o_drain})
    assert [cycle["drain"] for cycle in seen[99:]] == [0, 100 * 128 * 128, 0]


def test_pe_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^row must be from 0 to rows - 1 \(3\), not 4$"):
        WeightStationaryPE(row=4, input_width=8, weight_width=8, acc_width=32, rows=4)
    with pytest.raises(ValueError, match=r"^acc_width \(15\) must be at least input_width \+ "
                                         r"weight_width \(16\)$"):
        OutputStationaryPE(input_width=8, weight_width=8, acc_width=15)
