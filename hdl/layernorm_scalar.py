"""`LayerNormScalar`: LAYERNORM's per-row scalar stage, from the row's sums S1, S2 to the two
per-row operands of the lanes' product."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.divider import WIDE_DIVISOR_BITS, WIDE_PAIRS
from systolic.hdl.isqrt import SquareRoot
from systolic.isa.layernorm import NORMALIZED_BITS

__all__ = ["LANE_BITS", "MAX_K", "P_SHIFT", "SCALAR_CYCLES", "LayerNormScalar"]

MAX_K = 10
"""The largest k: V < 2^49, so V >> 20 < 2^30."""
P_SHIFT = 30 - NORMALIZED_BITS + MAX_K
"""The lanes' fixed rounding shift: p = rhe(t r 2^(10 - k) / 2^24) = rhe(t r / 2^(14 + k))."""
LANE_BITS = 51
"""Bits the lanes' product is computed modulo: |t r 2^(10 - k)| = |p| 2^24 < 2^49 (|p| <=
2^16 sqrt(H - 1) (1 + 2^-28) + 1 <= 2^24 + 1 for H < 2^16, since t_e^2 <= (H - 1) V and
r / 2^k <= 2^30 / sqrt(V) (1 + 2^-28)), so its low 51 bits, read as signed, are exact."""
_DIVIDE = 6
"""The step that starts the division; its last pair is taken in step _DIVIDE + WIDE_PAIRS + 1
(`Reciprocal`'s wide mode), the root is ready in the step after."""
_ROOT = _DIVIDE + WIDE_PAIRS + 2
SCALAR_CYCLES = _ROOT + 3
"""Cycles from `start` to `done`: 42."""


class LayerNormScalar(wiring.Component):
    """Compute a row's `a = (H r 2^(10 - k)) mod 2^51` and `b = (S1 r 2^(10 - k)) mod 2^51`
    (signed), with which each lane's `d_e a - b` is `t_e r 2^(10 - k)` modulo 2^51 (exact:
    `LANE_BITS`), and `r`, `k` of docs/isa.md, "LAYERNORM":

        V = H S2 - S1^2 + eps,  k = max(0, ceil((bitlen(V) - 30) / 2)),  Vn = V >> 2k,
        r = 0 if Vn == 0 else isqrt(floor(2^60 / Vn))

    One step per cycle from `start` (step 0): the s26 x s33 scalar multiplier gives H S2
    (step 1) and S1^2 (step 2), V is registered in step 4, k in step 5, Vn in step 6, which
    starts the shared divider (`Reciprocal`, wide mode, on the `div_*` ports); each quotient
    pair goes to a `SquareRoot` as it arrives, r is ready in step 39, the multiplier gives
    H r and S1 r (steps 39, 40), shifted left by 10 - k and registered; `done` pulses in step
    `SCALAR_CYCLES` (42) with `a` and `b`, held until the next `start`.

    Members
    -------
    start : ``In(1)``
        Pulse: `s1`, `s2`, `length` and `eps` are valid from now until `done`.
    s1, s2, length, eps : ``In(signed(25))``, ``In(unsigned(32))``, ``In(unsigned(16))``,
    ``In(unsigned(32))``
        S1 = sum d_e, S2 = sum d_e^2 (V < 2^49 follows), H and eps.
    div_start, div_divisor : ``Out(1)``, ``Out(unsigned(32))``
        Start the divider on Vn (wide mode).
    div_pair_valid, div_pair : ``In(1)``, ``In(unsigned(2))``
        The divider's quotient pairs.
    done : ``Out(1)``
    a, b : ``Out(unsigned(51))``, ``Out(signed(51))``
    r, k : ``Out(unsigned(31))``, ``Out(range(11))``
    """

    def __init__(self):
        super().__init__({
            "start": In(1),
            "s1": In(signed(25)),
            "s2": In(unsigned(32)),
            "length": In(unsigned(16)),
            "eps": In(unsigned(32)),
            "div_start": Out(1),
            "div_divisor": Out(unsigned(32)),
            "div_pair_valid": In(1),
            "div_pair": In(unsigned(2)),
            "done": Out(1),
            "a": Out(unsigned(LANE_BITS)),
            "b": Out(signed(LANE_BITS)),
            "r": Out(unsigned(31)),
            "k": Out(range(MAX_K + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.root = root = SquareRoot(WIDE_PAIRS)
        step = Signal(range(SCALAR_CYCLES + 1), name="step")
        with m.If(self.start):
            m.d.sync += step.eq(1)
        with m.Elif((step != 0) & (step != SCALAR_CYCLES)):
            m.d.sync += step.eq(step + 1)
        with m.Else():
            m.d.sync += step.eq(0)
        m.d.comb += self.done.eq(step == SCALAR_CYCLES)
        vn, zero = self._variance(m, step)
        first = Signal(name="first_pair")
        with m.If(step == _DIVIDE):
            m.d.sync += first.eq(1)
        with m.Elif(self.div_pair_valid):
            m.d.sync += first.eq(0)
        m.d.comb += [
            self.div_start.eq(step == _DIVIDE),
            self.div_divisor.eq(vn),
            root.first.eq(first),
            root.pair_valid.eq(self.div_pair_valid),
            root.pair.eq(self.div_pair),
            self.r.eq(Mux(zero, 0, root.root)),
        ]
        return m

    def _variance(self, m, step):
        """Steps 1 .. 6 and the products of r: V, k, Vn, then a and b; return (Vn, Vn == 0)."""
        operand_a = Signal(signed(26), name="scalar_a")
        operand_b = Signal(signed(33), name="scalar_b")
        product = Signal(signed(59), name="scalar_product")
        use_h = (step == 1) | (step == _ROOT)
        m.d.comb += [
            operand_a.eq(Mux(use_h, self.length, self.s1)),
            operand_b.eq(Mux(step == 1, self.s2, Mux(step == 2, self.s1, self.r))),
        ]
        m.d.sync += product.eq(operand_a * operand_b)

        variance = Signal(unsigned(50), name="variance")
        vn = Signal(unsigned(WIDE_DIVISOR_BITS), name="variance_normalised")
        zero = Signal(name="variance_zero")
        with m.If(step == 2):
            m.d.sync += variance.eq(product + self.eps)
        with m.Elif(step == 3):
            m.d.sync += variance.eq(variance - product)
        with m.If(step == 4):  # k = #{j in 1..10: V >= 2^(28 + 2j)}
            m.d.sync += self.k.eq(sum(variance[28 + 2 * j:].any() for j in range(1, MAX_K + 1)))
        with m.If(step == 5):
            m.d.sync += vn.eq(variance >> Cat(0, self.k))
        with m.If(step == _DIVIDE):
            m.d.sync += zero.eq(vn == 0)

        left = Signal(range(MAX_K + 1), name="left_shift")
        m.d.comb += left.eq(MAX_K - self.k)
        scaled = (product << left)[:LANE_BITS]
        with m.If(step == _ROOT + 1):
            m.d.sync += self.a.eq(scaled)
        with m.If(step == _ROOT + 2):
            m.d.sync += self.b.eq(scaled)
        return vn, zero
