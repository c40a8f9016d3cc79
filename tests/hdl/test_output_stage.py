# amaranth: UnusedElaboratable=no

"""OutputStage against the golden model `systolic.isa.requant.requantize`, bit-exact."""

import random

import numpy as np
import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from systolic.hdl.output_stage import LATENCY, OutputStage
from systolic.isa.requant import requantize

from .streams import field, pack, stream_get, stream_put, unpack_array

# -- stimulus ----------------------------------------------------------------------------------


def log_uniform(rng: np.random.Generator, shape, width: int) -> np.ndarray:
    """Signed values below 2**(width - 1) in magnitude whose bit length is uniform."""
    bits = rng.integers(0, width, shape)
    return rng.integers(-(2**62), 2**62, shape) >> (63 - bits)


def random_params(rng: np.random.Generator, cols: int, acc_width: int) -> dict:
    """Per-lane parameters that land many results inside the int8 range, plus some extremes."""
    multiplier = rng.integers(2**30, 2**31, cols)
    wild = rng.random(cols) < 0.25  # any int32, negative ones included: the full signed product
    multiplier[wild] = rng.integers(-(2**31), 2**31, int(wild.sum()))
    # |acc * M| ~ 2**(acc_width - 2 + 30.5); an output near 2**6 needs s ~ acc_width - 9.
    shift = np.clip(acc_width - 9 + rng.integers(-6, 4, cols), -31, 31)
    extreme = rng.random(cols) < 0.15
    shift[extreme] = rng.choice([-31, 31], int(extreme.sum()))
    zero_point = int(rng.integers(-128, 128))
    lo, hi = -128, 127
    clamp = rng.integers(4)
    if clamp == 1:  # fused ReLU
        lo = zero_point
    elif clamp == 2:  # fused ReLU6-like: a narrow band above the zero point
        lo, hi = zero_point, min(127, zero_point + int(rng.integers(0, 100)))
    elif clamp == 3:
        lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2))
    return {
        "bias": log_uniform(rng, cols, acc_width - 2),
        "multiplier": multiplier,
        "shift": shift,
        "zero_point": zero_point,
        "lo": lo,
        "hi": hi,
    }


def random_rows(rng: np.random.Generator, rows: int, cols: int, acc_width: int) -> np.ndarray:
    """Accumulators of random magnitude (log-uniform), with the two extremes mixed in."""
    acc = log_uniform(rng, (rows, cols), acc_width)
    corners = rng.random((rows, cols)) < 0.05
    acc[corners] = rng.choice([-(2 ** (acc_width - 1)), 2 ** (acc_width - 1) - 1], corners.sum())
    return acc


# -- simulation --------------------------------------------------------------------------------


def set_params(ctx, dut: OutputStage, params: dict) -> None:
    """Drive the stage's parameter ports (whole buses at once)."""
    ctx.set(dut.bias, [int(v) for v in params["bias"]])
    ctx.set(dut.multiplier, [int(v) for v in params["multiplier"]])
    ctx.set(dut.shift, [int(v) for v in params["shift"]])
    ctx.set(dut.zero_point, params["zero_point"])
    ctx.set(dut.lo, params["lo"])
    ctx.set(dut.hi, params["hi"])


def run_stage(dut, params, acc, *, seed, valid_probability, ready_probability):
    """Stream `acc` through `dut` with random input gaps and output stalls.

    Return (outputs, last flags, cycle each row entered, cycle each row left).
    """
    rows, cols = acc.shape
    in_layout = dut.i_acc.payload.shape()
    out_layout = dut.o_q.payload.shape()
    beats = [pack(in_layout, {"data": [int(v) for v in acc[r]], "last": r == rows - 1})
             for r in range(rows)]
    log: dict[str, list[int]] = {}

    async def producer(ctx):
        set_params(ctx, dut, params)
        rng = random.Random(seed)
        log["in"] = await stream_put(ctx, dut.i_acc, beats, rng=rng,
                                     valid_probability=valid_probability)

    async def consumer(ctx):
        rng = random.Random(seed + 1)
        log["bits"], log["out"] = await stream_get(ctx, dut.o_q, rows, rng=rng,
                                                   ready_probability=ready_probability)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    got = np.array([unpack_array(field(out_layout, bits, "data"), dut.out_width, cols)
                    for bits in log["bits"]], dtype=np.int64).reshape(rows, cols)
    last = [field(out_layout, bits, "last") for bits in log["bits"]]
    return got, last, log["in"], log["out"]


@pytest.mark.parametrize(
    ("cols", "acc_width", "rows"),
    [(1, 32, 120), (3, 32, 120), (8, 32, 80), (16, 32, 50), (3, 20, 120), (8, 20, 60)],
)
def test_random_rows_match_golden_model(cols, acc_width, rows):
    rng = np.random.default_rng(1000 * cols + acc_width)
    params = random_params(rng, cols, acc_width)
    acc = random_rows(rng, rows, cols, acc_width)
    dut = OutputStage(cols=cols, acc_width=acc_width)

    got, last, _, _ = run_stage(dut, params, acc, seed=cols, valid_probability=0.7,
                                ready_probability=0.7)

    np.testing.assert_array_equal(got, requantize(acc, **params))
    assert last == [0] * (rows - 1) + [1]


def test_extreme_values_match_golden_model():
    cols = 8
    extremes = [-(2**31), -(2**31) + 1, -1, 0, 1, 2**31 - 1]
    rng = np.random.default_rng(7)
    acc = rng.choice(extremes, (64, cols))
    params = {
        "bias": np.array([-(2**31), 2**31 - 1, 0, -1, 1, 2**31 - 1, -(2**31), 12345]),
        "multiplier": np.array([-(2**31), 2**31 - 1, 2**30, -1, 1, 0, 2**31 - 1, -(2**31)]),
        "shift": np.array([-31, -31, 31, 31, -31, 0, 31, 30]),
        "zero_point": -128,
        "lo": -128,
        "hi": 127,
    }
    dut = OutputStage(cols=cols)

    got, _, entered, left = run_stage(dut, params, acc, seed=3, valid_probability=1.0,
                                      ready_probability=1.0)

    expected = requantize(acc, **params)
    np.testing.assert_array_equal(got, expected)
    assert {-128, 127} <= set(expected.ravel().tolist())  # both saturations were exercised
    # Without gaps or stalls: one row per cycle, each out exactly LATENCY cycles after it went in.
    assert entered == list(range(len(acc)))
    assert [b - a for a, b in zip(entered, left, strict=True)] == [LATENCY] * len(acc)


def tie_lane(rng: np.random.Generator, right_shift: int, rows: int) -> tuple[int, np.ndarray]:
    """Return (M, acc column) with every acc * M exactly halfway between two multiples of 2**r."""
    m_bits = min(30, max(0, right_shift - 30))
    d = right_shift - m_bits  # acc = k * 2**d + 2**(d - 1): a tie after multiplying by 2**m_bits
    half = 1 << (d - 1)
    k_min = max(-60, -((2**31 + half) // 2**d))
    k_max = min(60, (2**31 - 1 - half) // 2**d)
    k = rng.integers(k_min, k_max + 1, rows)
    return 2**m_bits, k * 2**d + half


def test_ties_round_to_even_at_every_shift():
    cols, rows = 8, 12
    rng = np.random.default_rng(11)
    for first in range(1, 63, cols):
        shifts = [min(r, 62) for r in range(first, first + cols)]
        lanes = [tie_lane(rng, r, rows) for r in shifts]
        acc = np.stack([column for _, column in lanes], axis=1)
        params = {
            "bias": np.zeros(cols, dtype=np.int64),
            "multiplier": np.array([m for m, _ in lanes]),
            "shift": np.array(shifts) - 31,
            "zero_point": 0,
            "lo": -128,
            "hi": 127,
        }
        dut = OutputStage(cols=cols)

        got, _, _, _ = run_stage(dut, params, acc, seed=first, valid_probability=0.8,
                                 ready_probability=0.8)

        floor = (acc * params["multiplier"].astype(object)) >> np.array(shifts, dtype=object)
        expected = np.asarray(floor + (floor % 2), dtype=np.int64)  # the even neighbour
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, requantize(acc, **params))


def test_latency_and_backpressure_hold():
    dut = OutputStage(cols=2)
    params = {
        "bias": np.array([0, 5]),
        "multiplier": np.array([2**30, 2**30]),
        "shift": np.array([-1, -1]),  # q = (acc + bias) * 2**30 / 2**30 exactly
        "zero_point": 0,
        "lo": -128,
        "hi": 127,
    }
    log: dict[str, object] = {}

    async def testbench(ctx):
        set_params(ctx, dut, params)
        ctx.set(dut.o_q.ready, 1)
        assert not ctx.get(dut.busy)
        row = pack(dut.i_acc.payload.shape(), {"data": [7, -7], "last": 1})
        await stream_put(ctx, dut.i_acc, [row])
        cycles = 1  # now one cycle after the transfer
        while not ctx.get(dut.o_q.valid):
            await ctx.tick()
            cycles += 1
        log["latency"] = cycles
        log["first"] = [int(v) for v in ctx.get(dut.o_q.payload.data)]
        await ctx.tick()
        assert not ctx.get(dut.busy)

        # A stalled output fills exactly LATENCY stages, then input ready falls.
        ctx.set(dut.o_q.ready, 0)
        ctx.set(dut.i_acc.valid, 1)
        accepted = 0
        for _ in range(10):
            ctx.set(dut.i_acc.payload, {"data": [accepted, -accepted], "last": 0})
            _, _, ready = await ctx.tick().sample(dut.i_acc.ready)
            accepted += int(ready)
        ctx.set(dut.i_acc.valid, 0)
        log["accepted"] = accepted
        assert ctx.get(dut.busy)
        bits, _ = await stream_get(ctx, dut.o_q, accepted)
        data_bits = [field(dut.o_q.payload.shape(), b, "data") for b in bits]
        log["received"] = [unpack_array(b, 8, 2) for b in data_bits]
        await ctx.tick()
        assert not ctx.get(dut.o_q.valid) and not ctx.get(dut.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()

    assert log["latency"] == LATENCY == 6
    assert log["first"] == [7, -2]
    assert log["accepted"] == LATENCY
    assert log["received"] == [[i, -i + 5] for i in range(LATENCY)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cols": 0}, r"^cols must be a positive integer, not 0$"),
        ({"cols": 2, "acc_width": 1}, r"^acc_width must be an integer of at least 2, not 1$"),
        ({"cols": 2, "out_width": "8"}, r"^out_width must be an integer of at least 2, not '8'$"),
    ],
)
def test_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OutputStage(**kwargs)


def test_converts_to_verilog():
    dut = OutputStage(cols=2, acc_width=20)
    text = verilog.convert(dut, name="output_stage")
    assert "module output_stage" in text
    for port in ("i_acc__payload", "i_acc__ready", "o_q__payload", "o_q__valid", "multiplier"):
        assert port in text


def test_lent_multipliers_return_the_product_a_cycle_later():
    dut = OutputStage(cols=2, lend_multipliers=True)
    rng = random.Random(9)
    cases = [([-(2**26), 2**26 - 1], -(2**31)), ([12345, -1], 2**31 - 1)]
    cases += [([rng.randrange(-(2**26), 2**26) for _ in range(2)],
                rng.randrange(-(2**31), 2**31)) for _ in range(20)]
    got = []

    async def testbench(ctx):
        ctx.set(dut.lend, 1)
        for xs, multiplier in cases:
            ctx.set(dut.lend_x, xs)
            ctx.set(dut.lend_multiplier, multiplier)
            await ctx.tick()
            got.append([ctx.get(dut.o_lent[i]) for i in range(2)])
        assert not ctx.get(dut.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert got == [[x * multiplier for x in xs] for xs, multiplier in cases]
