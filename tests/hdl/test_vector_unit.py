# amaranth: UnusedElaboratable=no

"""VectorUnit against exact integer math (numpy object arrays), latency and backpressure."""

import random

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from systolic.hdl.vector_unit import (
    LATENCY,
    MAX,
    PRODUCT,
    PRODUCT_LATENCY,
    SCALED_SUM,
    VectorUnit,
    element_layout,
)
from systolic.isa.requant import round_shift_half_even

from .streams import pack, stream_get, stream_put, unpack_array


def expected_rows(groups, sels, mode, params) -> list[list[int]]:
    """Reduce each group (an array of rows) exactly as the numeric contract says."""
    out = []
    for rows, sel in zip(groups, sels, strict=True):
        if mode == MAX:
            y = rows.max(axis=0)
        elif mode == PRODUCT:
            a, b = (row.astype(object) - params["zero_in"][s] for row, s in zip(rows, sel, strict=True))
            y = round_shift_half_even(a * b * params["multiplier"][0], 31 + params["shift"]) \
                + params["zero_out"]
        else:
            terms = [(row.astype(object) - params["zero_in"][s]) * params["multiplier"][s]
                     for row, s in zip(rows, sel, strict=True)]
            total = np.sum(terms, axis=0)
            y = round_shift_half_even(total, 31 + params["shift"]) + params["zero_out"]
        out.append([int(v) for v in np.clip(y.astype(object), params["lo"], params["hi"])])
    return out


def run(lanes: int, input_width: int, mode: int, groups, sels, params, *,
        rng: random.Random | None = None):
    dut = VectorUnit(lanes=lanes, input_width=input_width)
    layout = element_layout(input_width, lanes)
    beats = []
    for rows, sel in zip(groups, sels, strict=True):
        for index, (row, s) in enumerate(zip(rows, sel, strict=True)):
            beats.append(pack(layout, {"data": [int(v) for v in row], "sel": s,
                                       "first": index == 0, "last": index == len(rows) - 1}))
    result = {}

    async def producer(ctx):
        ctx.set(dut.mode, mode)
        for s in (0, 1):
            ctx.set(dut.multiplier[s], params["multiplier"][s])
            ctx.set(dut.zero_in[s], params["zero_in"][s])
        for name in ("shift", "zero_out", "lo", "hi"):
            ctx.set(getattr(dut, name), params[name])
        result["taken"] = await stream_put(ctx, dut.i_elem, beats, rng=rng,
                                           valid_probability=0.7)

    async def consumer(ctx):
        result["rows"], result["cycles"] = await stream_get(
            ctx, dut.o_row, len(groups), rng=rng, ready_probability=0.6)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    rows = [unpack_array(bits, 8, lanes) for bits in result["rows"]]
    return rows, result


def random_params(rng: np.random.Generator, mode: int) -> dict:
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2)) if rng.random() < 0.5 \
        else (-128, 127)
    return {
        "multiplier": [int(v) for v in rng.integers(-(2**31), 2**31, 2)],
        "zero_in": [int(v) for v in rng.integers(-128, 128, 2)],
        "shift": int(rng.integers(-31, 32)) if rng.random() < 0.3 else int(rng.integers(0, 8)),
        "zero_out": int(rng.integers(-128, 128)) if mode != MAX else 0,
        "lo": lo,
        "hi": hi,
    }


@pytest.mark.parametrize("input_width", [8, 16, 5])
@pytest.mark.parametrize("mode", [MAX, SCALED_SUM])
def test_random_groups(mode: int, input_width: int) -> None:
    rng = np.random.default_rng([mode, input_width])
    lanes = 5
    half = 1 << (input_width - 1)
    sizes = rng.integers(1, 10, 25)
    groups = [rng.integers(-half, half, (int(n), lanes)) for n in sizes]
    sels = [[int(v) for v in rng.integers(0, 2, int(n))] for n in sizes]
    params = random_params(rng, mode)
    rows, _ = run(lanes, input_width, mode, groups, sels, params, rng=random.Random(3))
    assert rows == expected_rows(groups, sels, mode, params)


def test_add_pairs_and_latency() -> None:
    """ADD's two-row groups, one element per cycle, the row LATENCY cycles after its last."""
    rng = np.random.default_rng(8)
    lanes = 3
    groups = [rng.integers(-128, 128, (2, lanes)) for _ in range(10)]
    sels = [[0, 1]] * 10
    params = random_params(rng, SCALED_SUM)
    rows, result = run(lanes, 8, SCALED_SUM, groups, sels, params)
    assert rows == expected_rows(groups, sels, SCALED_SUM, params)
    assert result["taken"] == list(range(20))
    assert result["cycles"] == [2 * g + 1 + LATENCY for g in range(10)]


@pytest.mark.parametrize("input_width", [8, 5])
def test_product_pairs_and_latency(input_width: int) -> None:
    """ADD with mul: (a - zp_a)(b - zp_b)M over two-row groups, PRODUCT_LATENCY cycles after
    b; with random gaps and backpressure the rows stay exact."""
    rng = np.random.default_rng([9, input_width])
    lanes, half = 4, 1 << (input_width - 1)
    groups = [rng.integers(-half, half, (2, lanes)) for _ in range(12)]
    groups.append(np.array([[-128] * lanes, [-128] * lanes]) >> (8 - input_width))
    sels = [[0, 1]] * len(groups)
    params = random_params(rng, PRODUCT)
    params["shift"] = int(rng.integers(-8, 4))
    rows, result = run(lanes, input_width, PRODUCT, groups, sels, params)
    assert rows == expected_rows(groups, sels, PRODUCT, params)
    assert result["taken"] == list(range(2 * len(groups)))
    assert result["cycles"] == [2 * g + 1 + PRODUCT_LATENCY for g in range(len(groups))]
    rows, _ = run(lanes, input_width, PRODUCT, groups, sels, params, rng=random.Random(4))
    assert rows == expected_rows(groups, sels, PRODUCT, params)


def test_product_extremes() -> None:
    """The largest product, (-255)^2 * -2**31 at shift -31, is exact and clamps."""
    groups = [np.array([[-128, -128], [127, -128]])]
    params = {"multiplier": [-(2**31), 5], "zero_in": [127, 127], "shift": -31,
              "zero_out": 0, "lo": -128, "hi": 127}
    rows, _ = run(2, 8, PRODUCT, groups, [[0, 1]], params)
    assert rows == expected_rows(groups, [[0, 1]], PRODUCT, params) == [[0, -128]]
    params["shift"] = 31
    rows, _ = run(2, 8, PRODUCT, groups, [[0, 1]], params)
    assert rows == expected_rows(groups, [[0, 1]], PRODUCT, params)


def test_extremes_saturate() -> None:
    """Full-scale sums of many elements with the largest multipliers clamp, never wrap."""
    lanes = 2
    groups = [np.full((40, lanes), v) for v in (-128, 127)]
    sels = [[0] * 40] * 2
    params = {"multiplier": [-(2**31), 0], "zero_in": [127, 0], "shift": -31,
              "zero_out": 0, "lo": -128, "hi": 127}
    rows, _ = run(lanes, 8, SCALED_SUM, groups, sels, params)
    assert rows == expected_rows(groups, sels, SCALED_SUM, params) == [[127, 127], [0, 0]]


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^lanes must be a positive integer, not 0$"):
        VectorUnit(lanes=0)


def test_verilog() -> None:
    text = verilog.convert(VectorUnit(lanes=4), name="vector_unit")
    assert "module vector_unit" in text
