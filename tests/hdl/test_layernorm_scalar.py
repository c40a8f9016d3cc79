# amaranth: UnusedElaboratable=no

"""LayerNormScalar with the shared divider: r, k (`systolic.isa.layernorm.inverse_sqrt`) and the
lanes' operands a, b for sums of random and extreme rows, `done` SCALAR_CYCLES after `start`;
each lane's d a - b modulo 2^51 equals t r 2^(10 - k) and rounds to the spec's p."""

import numpy as np
from amaranth.hdl import Module
from amaranth.sim import Simulator

from systolic.hdl.divider import Reciprocal
from systolic.hdl.layernorm_scalar import LANE_BITS, MAX_K, P_SHIFT, SCALAR_CYCLES, LayerNormScalar
from systolic.isa.layernorm import inverse_sqrt
from systolic.isa.requant import round_shift_half_even


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def scalars(rows: list[tuple[list[int], int]]) -> list[tuple[int, int, int, int, int]]:
    """Return (cycles from start to done, r, k, a, b) for each row (d values, eps)."""
    m = Module()
    m.submodules.scalar = dut = LayerNormScalar()
    m.submodules.divider = divider = Reciprocal()
    m.d.comb += [divider.start.eq(dut.div_start), divider.wide.eq(1),
                 divider.divisor.eq(dut.div_divisor), dut.div_pair_valid.eq(divider.pair_valid),
                 dut.div_pair.eq(divider.pair)]
    results = []

    async def testbench(ctx):
        for d, eps in rows:
            ctx.set(dut.s1, sum(d))
            ctx.set(dut.s2, sum(v * v for v in d))
            ctx.set(dut.length, len(d))
            ctx.set(dut.eps, eps)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            cycles = 1
            while not ctx.get(dut.done):
                await ctx.tick()
                cycles += 1
                assert cycles < 100
            results.append((cycles, ctx.get(dut.r), ctx.get(dut.k), ctx.get(dut.a),
                            ctx.get(dut.b)))
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return results


def _rows() -> list[tuple[list[int], int]]:
    rng = np.random.default_rng(3)
    rows = [([0], 0), ([5, 5, 5], 0), ([5, 5, 5], 1), ([255, -255], 0), ([-255], 2**32 - 1),
            ([255, -255] * 32767 + [255], 0), ([255] * 65534 + [-255], 0),
            ([1, 0] * 32000, 7)]
    for _ in range(12):
        length = int(rng.integers(1, 3000))
        spread = int(rng.integers(1, 256))
        d = [int(v) for v in np.clip(rng.integers(-spread, spread + 1, length)
                                     + int(rng.integers(-255, 256)), -255, 255)]
        eps = int(rng.integers(0, 2**32)) >> int(rng.integers(0, 33))
        rows.append((d, eps))
    return rows


def test_scalars_and_lane_products_follow_the_spec() -> None:
    rows = _rows()
    for (d, eps), (cycles, r, k, a, b) in zip(rows, scalars(rows), strict=True):
        h, s1, s2 = len(d), sum(d), sum(v * v for v in d)
        want_r, want_k = inverse_sqrt(h * s2 - s1 * s1 + eps)
        assert (cycles, r, k) == (SCALAR_CYCLES, want_r, want_k)
        assert a == (h * r << (MAX_K - k)) % 2**LANE_BITS
        assert _signed(b, LANE_BITS) == _signed(s1 * r << (MAX_K - k), LANE_BITS)
        for e in {0, len(d) // 2, len(d) - 1, int(np.argmax(d)), int(np.argmin(d))}:
            lane = _signed(d[e] * a - b, LANE_BITS)
            assert lane == (h * d[e] - s1) * r << (MAX_K - k)
            assert round_shift_half_even(lane, P_SHIFT) == \
                round_shift_half_even((h * d[e] - s1) * r, 14 + k)
