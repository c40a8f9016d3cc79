"""`SquareRoot`: a digit-serial integer square root, the radicand two bits per cycle."""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SquareRoot"]


class SquareRoot(wiring.Component):
    """Compute `root = isqrt(N)` (the floor of the square root) of a `2 * bits`-bit radicand
    N that arrives two bits per cycle, most significant pair first.

    Restoring square root, one root bit per pair: with the partial remainder `rem` and root
    `q` (q^2 + rem = the pairs so far, rem <= 2 q), a pair p gives t = 4 rem + p; when
    t >= 4 q + 1 the next root bit is 1 and rem becomes t - (4 q + 1), else it is 0 and rem
    becomes t. One `bits + 3`-bit compare-and-subtract per cycle. Because the radicand is
    consumed from the top, a digit-serial producer (the LAYERNORM division, `Reciprocal`'s
    wide mode) can feed it as its quotient bits appear.

    Parameters
    ----------
    bits : int
        Root bits: the radicand has `2 * bits` bits.

    Members
    -------
    first : ``In(1)``
        With `pair_valid`: this pair is the radicand's first (the state restarts from 0).
    pair_valid : ``In(1)``
        Take `pair` in this cycle.
    pair : ``In(unsigned(2))``
        The radicand's next two bits (the higher one is bit 1).
    root : ``Out(unsigned(bits))``
        Registered: `isqrt` of the pairs taken so far (since the last `first`), from the cycle
        after the last one.
    """

    def __init__(self, bits: int):
        if not isinstance(bits, int) or bits < 1:
            raise ValueError(f"bits must be a positive integer, not {bits!r}")
        self._bits = bits
        super().__init__({
            "first": In(1),
            "pair_valid": In(1),
            "pair": In(unsigned(2)),
            "root": Out(unsigned(bits)),
        })

    def elaborate(self, platform):
        m = Module()
        bits = self._bits
        rem = Signal(bits + 1, name="remainder")  # rem <= 2 q < 2^(bits + 1)
        rem_now = Mux(self.first, 0, rem)
        root_now = Mux(self.first, 0, self.root)
        trial = Signal(bits + 3, name="trial")
        shifted = Signal(bits + 3, name="shifted")
        fits = Signal(name="fits")
        m.d.comb += [
            shifted.eq((rem_now << 2) | self.pair),
            trial.eq((root_now << 2) | 1),
            fits.eq(shifted >= trial),
        ]
        with m.If(self.pair_valid):
            m.d.sync += [
                rem.eq(Mux(fits, shifted - trial, shifted)),
                self.root.eq((root_now << 1) | fits),
            ]
        return m
