"""The output stage: requantizes rows of accumulators to signed `out_width`-bit outputs."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.dsp_product import partial_products, sum_partials
from systolic.hdl.round_shift import COARSE_STEP, clamp_bounds, coarse_shift, fine_round_clamped

__all__ = ["LATENCY", "MULTIPLIER_WIDTH", "PARAM_WIDTH", "SHIFT_WIDTH", "OutputStage"]

LATENCY = 6
"""Cycles from a row's transfer on `i_acc` to its `o_q.valid`, without backpressure."""

WINDOW_MARGIN = 11
"""Bits of `coarse_shift`'s window beyond out_width: a saturated window's floor (beyond
+-2**(out_width + 1) after the fine shift of at most 9) clamps like the floor range's ends."""

_FINE_BITS = (COARSE_STEP - 1).bit_length()  # the amount's low bits, shifted in stage 5

PARAM_WIDTH = 32
"""Width of the per-lane bias (int32, as ONNX's quantized bias)."""

MULTIPLIER_WIDTH = 32
"""Width of the per-lane fixed-point multiplier M (int32; normalised M lies in [2**30, 2**31))."""

SHIFT_WIDTH = 6
"""Width of the per-lane shift s (signed, s in [-31, 31]: a total right shift 31 + s of 0..62)."""


def _row_layout(element: object, cols: int) -> data.StructLayout:
    return data.StructLayout({"data": data.ArrayLayout(element, cols), "last": 1})


class OutputStage(wiring.Component):
    """Requantize each lane of an accumulator row, exactly as the numeric contract says.

    Per lane, with per-lane `bias`, `multiplier` M and `shift` s and per-stage `zero_point`,
    `lo` and `hi`::

        x = acc + bias                              exact, max(acc_width, 32) + 1 bits
        p = x * M                                   exact, that + 32 bits (65 for int32 acc)
        q = round_half_to_even(p / 2**(31 + s))     arithmetic right shift by 0..62, ties to even
        y = clamp(q + zero_point, lo, hi)           signed out_width bits

    The golden model is `systolic.isa.requant.requantize` (bit-exact for out_width 8).

    Parameters
    ----------
    cols : int
        Number of lanes (the array's columns), at least 1.
    acc_width : int
        Width of the signed accumulators, at least 2.
    out_width : int
        Width of the signed outputs, at least 2 (8: int8, and uint8 carried as int8).
    lend_multipliers : bool
        Lend stage 2's DSP blocks while the stage is empty (the STORE unit's SOFTMAX and
        LAYERNORM, `SoftmaxUnit.external_requant`): adds `lend`, `lend_x`, `lend_multiplier`
        and `o_lent`.

    Members
    -------
    i_acc : ``In(stream.Signature(StructLayout({"data": ArrayLayout(signed(acc_width), cols),
    "last": 1})))``
        Accumulator rows; `last` marks a tile's final row and is passed through unchanged.
    o_q : ``Out(stream.Signature(StructLayout({"data": ArrayLayout(signed(out_width), cols),
    "last": 1})))``
        Requantized rows, in input order.
    bias : ``In(ArrayLayout(signed(32), cols))``
    multiplier : ``In(ArrayLayout(signed(32), cols))``
    shift : ``In(ArrayLayout(signed(6), cols))``
        Per-lane parameters. s must lie in [-31, 31] (s = -32 shifts right by 63).
    zero_point : ``In(signed(out_width))``
    lo : ``In(signed(out_width))``
    hi : ``In(signed(out_width))``
        Per-stage parameters: the output zero point (for uint8, already moved to int8 by the
        top-bit flip) and the clamp bounds, lo <= hi (a fused ReLU raises lo to the zero point,
        ReLU6/Clip lower hi). With lo > hi every output is hi.
    lend, lend_x, lend_multiplier, o_lent : with `lend_multipliers` only
        While `lend` (and the stage holds no row), stage 2's partial-product registers load
        the pieces of lend_x[i] * lend_multiplier instead, and `o_lent[i]` is their sum: the
        exact product of the operands of the previous cycle.
    busy : ``Out(1)``
        A row is inside the stage. The bias is read combinationally by stage 1, the others
        through per-lane registers loaded every cycle (the multiplier read one cycle after a
        tile's first transfer, the shift three, the floor's bounds derived from it
        (`round_shift.clamp_bounds`, a register of the amount's register) four, the clamp
        parameters five), so the caller must
        hold them stable from a tile's first transfer on `i_acc` until `busy` falls after its
        last row left on `o_q`.

    Latency, throughput and backpressure
    ------------------------------------
    Six pipeline stages: (1) x, (2) the partial products of x * M, one per pair of 17-bit limbs
    (`systolic.hdl.dsp_product`), (3) their sum p, (4) the coarse half of the rounding shift
    (`round_shift.coarse_shift`: by 8 times the amount's top three bits, into a saturated
    window of out_width + WINDOW_MARGIN bits and a sticky bit), (5) the fine half
    (`round_shift.fine_round_clamped`) with the floor saturated to out_width + 2 bits, (6)
    round-up, zero point and clamp. A row transferred on `i_acc` in cycle t is valid on `o_q`
    in cycle t + LATENCY (6) when `o_q` is ready; one row per cycle. Each stage advances when
    it is empty or its successor advances, so bubbles collapse and a stalled `o_q` fills the
    pipeline before `i_acc.ready` falls; no row is lost or repeated. `i_acc.ready` depends
    combinationally on `o_q.ready` (a chain of `cols`-independent ORs). STORE's `fixed_cycles`
    K = 3 + LATENCY = 9 in `systolic.sim.timing.store_timing`, the native facts and
    docs/cycle-model.md.

    Cost per lane
    -------------
    One 33-bit adder (for acc_width <= 32), four signed 18 x 18 multipliers (one DSP block each;
    more limbs for wider accumulators) and a 65-bit adder tree of depth 2, an 8:1 mux of
    out_width + 11 bits with eight sign tests of p's top bits and a 67-bit sticky OR, a
    (out_width + 11)-bit shifter of three mux levels, two (out_width + 3)-bit adders and four
    comparators. Registers: 33 + 4 x 36 + 65 + (out_width + 12) + (out_width + 3) + out_width
    bits, plus one valid and one `last` bit per stage.

    FPGA note (bench/README.md, "FPGA"): with four stages (session 8) the four MULT18X18D
    blocks' partial products were summed by carry chains in the product's stage and the next
    was a 66-bit barrel shifter, comparison and sticky OR: 40.2 MHz on ECP5; each of the six
    stages now holds at most one DSP block, one adder tree or a few LUT levels.
    """

    def __init__(self, *, cols: int, acc_width: int = 32, out_width: int = 8,
                 lend_multipliers: bool = False):
        if not isinstance(cols, int) or cols < 1:
            raise ValueError(f"cols must be a positive integer, not {cols!r}")
        if not isinstance(acc_width, int) or acc_width < 2:
            raise ValueError(f"acc_width must be an integer of at least 2, not {acc_width!r}")
        if not isinstance(out_width, int) or out_width < 2:
            raise ValueError(f"out_width must be an integer of at least 2, not {out_width!r}")
        self._cols = cols
        self._acc_width = acc_width
        self._out_width = out_width
        self._lend = lend_multipliers
        sum_width = max(acc_width, PARAM_WIDTH) + 1
        lent = {"lend": In(1), "lend_x": In(data.ArrayLayout(signed(sum_width), cols)),
                "lend_multiplier": In(signed(MULTIPLIER_WIDTH)),
                "o_lent": Out(data.ArrayLayout(signed(sum_width + MULTIPLIER_WIDTH), cols)),
                } if lend_multipliers else {}
        super().__init__({
            **lent,
            "i_acc": In(stream.Signature(_row_layout(signed(acc_width), cols))),
            "o_q": Out(stream.Signature(_row_layout(signed(out_width), cols))),
            "bias": In(data.ArrayLayout(signed(PARAM_WIDTH), cols)),
            "multiplier": In(data.ArrayLayout(signed(MULTIPLIER_WIDTH), cols)),
            "shift": In(data.ArrayLayout(signed(SHIFT_WIDTH), cols)),
            "zero_point": In(signed(out_width)),
            "lo": In(signed(out_width)),
            "hi": In(signed(out_width)),
            "busy": Out(1),
        })

    @property
    def cols(self) -> int:
        return self._cols

    @property
    def acc_width(self) -> int:
        return self._acc_width

    @property
    def out_width(self) -> int:
        return self._out_width

    def elaborate(self, platform):
        m = Module()
        cols, ow = self._cols, self._out_width
        sum_width = max(self._acc_width, PARAM_WIDTH) + 1
        product_width = sum_width + MULTIPLIER_WIDTH
        keep = ow + WINDOW_MARGIN  # coarse_shift's window: saturates beyond the clamp range
        floor_max = 2**ow - 1  # any floor beyond +-(2**ow) clamps the same as these bounds
        floor_min = -(2**ow) - 1

        valid = [Signal(name=f"valid{k}") for k in range(1, LATENCY + 1)]
        # advance[k]: stage k + 1 loads from its predecessor this cycle.
        advance = [Signal(name=f"advance{k}") for k in range(1, LATENCY + 1)]
        m.d.comb += advance[-1].eq(~valid[-1] | self.o_q.ready)
        for k in reversed(range(LATENCY - 1)):
            m.d.comb += advance[k].eq(~valid[k] | advance[k + 1])
        previous_valid = [self.i_acc.valid, *valid[:-1]]
        for k in range(LATENCY):
            with m.If(advance[k]):
                m.d.sync += valid[k].eq(previous_valid[k])
        m.d.comb += [
            self.i_acc.ready.eq(advance[0]),
            self.o_q.valid.eq(valid[-1]),
            self.busy.eq(Cat(*valid).any()),
        ]
        # `last` travels beside the rows, one register per stage.
        lasts = [Signal(name=f"last{k}") for k in range(1, LATENCY + 1)]
        for k, previous in enumerate([self.i_acc.payload.last, *lasts[:-1]]):
            with m.If(advance[k]):
                m.d.sync += lasts[k].eq(previous)
        m.d.comb += self.o_q.payload.last.eq(lasts[-1])
        # The shift amounts, registered every cycle: a row reaches stage 4 three cycles after
        # its tile's first transfer, and the parameters are stable from that transfer on, so
        # the register holds the tile's amounts by then (the adder leaves the stages' paths).
        amounts = [Signal(SHIFT_WIDTH, name=f"amount{i}") for i in range(cols)]
        m.d.sync += [amounts[i].eq((self.shift[i] + 31).as_unsigned()[:SHIFT_WIDTH])
                     for i in range(cols)]
        for i in range(cols):
            self._lane(m, i, advance, amounts[i], sum_width, product_width, keep,
                       (floor_min, floor_max))
        return m

    def _clamp_copies(self, m, i):
        """Lane i's copies of the per-stage parameters, registered every cycle (read by stage
        6, five cycles after a tile's first transfer): the zero point, hi, lo (or hi when
        lo > hi) and the bounds lo - zero_point, lo - zero_point - 1 and hi - zero_point that
        the floor is compared with."""
        ow = self._out_width
        names = ("zero_point", "low", "high", "low_rel", "low_rel_up", "high_rel")
        shapes = (signed(ow), signed(ow), signed(ow), signed(ow + 1), signed(ow + 2),
                  signed(ow + 1))
        zp, low, high, low_rel, low_rel_up, high_rel = (
            Signal(shape, name=f"{name}{i}") for name, shape in zip(names, shapes, strict=True))
        m.d.sync += [
            zp.eq(self.zero_point),
            low.eq(Mux(self.lo > self.hi, self.hi, self.lo)),
            high.eq(self.hi),
            low_rel.eq(self.lo - self.zero_point),
            low_rel_up.eq(self.lo - self.zero_point - 1),
            high_rel.eq(self.hi - self.zero_point),
        ]
        return zp, low, high, low_rel, low_rel_up, high_rel

    def _lane(self, m, i, advance, amount, sum_width, product_width, keep, floor_range):
        """Add lane `i`'s six stages (see the class docstring) to `m`."""
        x = Signal(signed(sum_width), name=f"x{i}")
        with m.If(advance[0]):
            m.d.sync += x.eq(self.i_acc.payload.data[i] + self.bias[i])
        multiplier = Signal(signed(MULTIPLIER_WIDTH), name=f"multiplier{i}")
        m.d.sync += multiplier.eq(self.multiplier[i])  # read one cycle after the first transfer
        if self._lend:  # while `lend`, the pieces are lend_x * lend_multiplier, summed on o_lent
            x_operand = Mux(self.lend, self.lend_x[i], x)
            pieces = partial_products(x_operand, Mux(self.lend, self.lend_multiplier, multiplier))
        else:
            pieces = partial_products(x, multiplier)
        partials = [Signal(signed(len(p)), name=f"partial{i}_{k}") for k, (p, _) in enumerate(pieces)]
        with m.If(advance[1]):
            m.d.sync += [r.eq(p) for r, (p, _) in zip(partials, pieces, strict=True)]
        total = sum_partials(partials, [k for _, k in pieces], product_width)
        if self._lend:
            m.d.comb += self.o_lent[i].eq(total)
        product = Signal(signed(product_width), name=f"product{i}")
        with m.If(advance[2]):
            m.d.sync += product.eq(total)
        window, sticky = Signal(signed(keep), name=f"window{i}"), Signal(name=f"sticky{i}")
        with m.If(advance[3]):
            coarse = coarse_shift(product, amount[_FINE_BITS:], keep)
            m.d.sync += [window.eq(coarse[0]), sticky.eq(coarse[1])]
        floor = Signal(signed(self._out_width + 2), name=f"floor{i}")
        round_up = Signal(name=f"round_up{i}")
        bounds = clamp_bounds(m, amount[:_FINE_BITS], *floor_range, name=f"clamp_bounds{i}")
        with m.If(advance[4]):
            clamped, up = fine_round_clamped(window, sticky, amount[:_FINE_BITS], bounds,
                                             *floor_range)
            m.d.sync += [floor.eq(clamped), round_up.eq(up)]
        zp, low, high, low_rel, low_rel_up, high_rel = self._clamp_copies(m, i)
        with m.If(advance[5]):
            # clamp(floor + round_up + zero_point, lo, hi): the floor is compared with the
            # bounds for either round_up beside the adders, round_up only selects (the
            # round-up's adder before the comparisons was the stage's path, 93.8 MHz alone)
            below = Mux(round_up, floor < low_rel_up, floor < low_rel)
            above = Mux(round_up, floor >= high_rel, floor > high_rel)
            m.d.sync += self.o_q.payload.data[i].eq(
                Mux(below, low, Mux(above, high, floor + round_up + zp)))
