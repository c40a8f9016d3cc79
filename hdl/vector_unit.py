"""`VectorUnit`: reduces groups of rows (POOL's windows, ADD's operand pairs) to int8 rows."""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.dsp_product import partial_products, sum_partials
from systolic.hdl.round_shift import COARSE_STEP, clamp_bounds, coarse_shift, fine_round_clamped
from systolic.hdl.shared_multipliers import multiply, operands_layout, products_layout

__all__ = [
    "LATENCY", "MAX", "PRODUCT", "PRODUCT_LATENCY", "SCALED_SUM", "VectorUnit", "element_layout",
]

LATENCY = 7
"""Cycles from a group's last element transfer on `i_elem` to its row's `o_row.valid` (MAX,
SCALED_SUM)."""

PRODUCT_LATENCY = 9
"""The same in PRODUCT mode (one more stage: the second multiplication)."""

WINDOW_MARGIN = 11
"""Bits of `coarse_shift`'s window beyond out_width (as the output stage's): a saturated
window's floor lies beyond the floor's saturation range, so it clamps the same."""

_FINE_BITS = (COARSE_STEP - 1).bit_length()  # the amount's low bits, shifted in stage 5

MAX, SCALED_SUM, PRODUCT = 0, 1, 2
"""Values of `mode`."""

_COUNT_BITS = 32  # a group holds fewer than 2**32 elements (POOL: kh * kw <= (2**16 - 1)**2)


def element_layout(input_width: int, lanes: int) -> data.StructLayout:
    """Return one input element: a row of `lanes` operands, `sel` and the group flags."""
    return data.StructLayout({
        "data": data.ArrayLayout(signed(input_width), lanes),
        "sel": 1,
        "first": 1,
        "last": 1,
    })


class VectorUnit(wiring.Component):
    """Reduce each group of input rows lane by lane to one signed `out_width`-bit row.

    A group is the rows from one with `first` to the next with `last` (one row may be both).
    Per lane, with `x` an input element and `sel` its multiplier select::

        MAX:         y = clamp(max over the group of x, lo, hi)
        SCALED_SUM:  t = sum over the group of (x - zero_in[sel]) * multiplier[sel]   exact
                     y = clamp(round_half_to_even(t / 2**(31 + shift)) + zero_out, lo, hi)
        PRODUCT:     t = (a - zero_in[0]) * (b - zero_in[1]) * multiplier[0]          exact
                     y as in SCALED_SUM

    POOL MAX is MAX; POOL AVG is SCALED_SUM with every `sel` 0 (the window's elements); ADD is
    SCALED_SUM over a two-row group, a (`sel` 0) then b (`sel` 1); ADD with `mul` is PRODUCT
    over the same two-row groups (a `first`, b `last`; `multiplier[1]` is not used). Bit-exact
    with `systolic.sim.golden.machine` (docs/numeric-contract.md, "Pooling", "Element-wise
    add", "Element-wise multiply").

    Parameters
    ----------
    lanes : int
        Elements per row, at least 1.
    input_width : int
        Width of the signed inputs, at least 2.
    out_width : int
        Width of the signed outputs, at least 2 (8).
    external_products : tuple of str
        The multiplications (names of `product_shapes`) whose products come from outside
        (`shared_multipliers`: the STORE unit computes them in the row-normalisation unit's
        multipliers): adds `o_operands` and `i_products` for them; timing and results
        unchanged.

    Members
    -------
    i_elem : ``In(stream.Signature(element_layout(input_width, lanes)))``
    o_row : ``Out(stream.Signature(ArrayLayout(signed(out_width), lanes)))``
        One row per group, in order.
    mode : ``In(2)``
        MAX (0), SCALED_SUM (1) or PRODUCT (2); held for whole groups, and changed only while
        the pipeline is empty (the STORE unit runs one instruction at a time). Stage 1 reads it
        combinationally, later stages through a copy registered every cycle (`late_max`,
        `late_product`), so it may come from the STORE unit's decode without a register.
    multiplier : ``In(ArrayLayout(signed(32), 2))``
    zero_in : ``In(ArrayLayout(signed(8), 2))``
        Per `sel`: the multiplier and the input zero point (SCALED_SUM).
    shift : ``In(signed(6))``
        s in -31..31: the exact sum is shifted right by 31 + s with ties to even.
    zero_out, lo, hi : ``In(signed(out_width))``
        Output zero point (SCALED_SUM only) and clamp bounds, lo <= hi.
    o_operands : ``Out(operands_layout(product_shapes(input_width), lanes))``
    i_products : ``In(products_layout(product_shapes(input_width), lanes))``
        With `external_products` only: per lane, the operands of those multiplications and, in
        the same cycle, their exact products.

    The parameters are read combinationally by the stage that needs them (the shift amount
    and the last stage's zero point and clamp bounds through registers loaded every cycle,
    read by stages 4 to 6, at least three cycles after the group's first element; the fine
    stage's floor bounds, `round_shift.clamp_bounds`, are a register of the amount's
    register, read five cycles after it at the earliest): hold them
    from a group's first element until its row has left `o_row`.

    Latency, throughput and backpressure
    ------------------------------------
    One element per cycle. Seven stages: (1) x - zero_in, (2) the product's DSP-sized partial
    products (`dsp_product.partial_products`, each registered at its multiplier's output),
    (2b) their sum, (3) group sum or max, (4) the coarse half of the rounding shift (`round_shift.coarse_shift`: by 8 times the
    amount's top three bits into a saturated window of out_width + WINDOW_MARGIN bits and a
    sticky bit), (5) the fine half (`round_shift.fine_round_clamped`) with the floor saturated
    to out_width + 2 bits (decided on the window beside the shifter), (6) zero point and
    clamp (MAX: shifted by 0, so the max itself). A group whose last element transfers in
    cycle t has its row valid on `o_row` in cycle t + LATENCY (7). PRODUCT has two more
    stages between (3) and (4): stage (2) turns a into (a - zero_in[0]) * multiplier[0] and b
    into b - zero_in[1] (its multiplier replaced by 1), stage (3) keeps the first and registers
    the second beside it, stage (3b) registers the partial products of their product (with
    "product" in `external_products`: the outside product whole) and (3c) their sum; its rows
    are valid in cycle t + PRODUCT_LATENCY (9). The whole pipeline holds while `o_row` has an
    untaken row: `i_elem.ready = ~o_row.valid | o_row.ready`. POOL's and ADD's
    K = 3 + LATENCY = 10 (12 with `mul`) in `systolic.sim.timing.store_timing`, the native
    facts and docs/cycle-model.md.

    Cost per lane
    -------------
    An (input_width + 1)-bit subtractor, a signed (input_width + 1) x 32 multiplier, an
    (input_width + 65)-bit accumulator (its adder; the max compares input_width bits), an
    8:1 mux of
    out_width + 11 bits with eight sign tests of the sum's top bits and a sticky OR of its
    bits, an (out_width + 11)-bit shifter of three mux levels, and two (out_width + 3)-bit
    adders with four comparators. PRODUCT adds a signed (input_width + 33) x
    (input_width + 1) multiplier (41 x 9 bits for int8), an (input_width + 1)-bit and an
    (input_width + 65)-bit register, and a mux in front of the coarse shift.

    FPGA note (bench/README.md, "FPGA"): the rounding shift was one stage, a barrel shifter of
    the whole (input_width + 65)-bit sum with its sticky OR and saturation, as the output
    stage's 66-bit one that limited it to 40.2 MHz on ECP5 before it was split the same way.
    With the products summed in the stage of their multipliers (LATENCY 6, PRODUCT 7) one
    lane alone routed at 91.5 MHz, its path a multiplier's output through the pieces' adder.
    """

    def __init__(self, *, lanes: int, input_width: int = 8, out_width: int = 8,
                 external_products: tuple[str, ...] = ()):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        if not isinstance(input_width, int) or input_width < 2:
            raise ValueError(f"input_width must be an integer of at least 2, not {input_width!r}")
        if not isinstance(out_width, int) or out_width < 2:
            raise ValueError(f"out_width must be an integer of at least 2, not {out_width!r}")
        self._lanes, self._input_width, self._out_width = lanes, input_width, out_width
        self.external_products = external_products
        shapes = {name: shape for name, shape in self.product_shapes(input_width).items()
                  if name in external_products}
        ports = {"o_operands": Out(operands_layout(shapes, lanes)),
                 "i_products": In(products_layout(shapes, lanes))} if shapes else {}
        super().__init__({
            **ports,
            "i_elem": In(stream.Signature(element_layout(input_width, lanes))),
            "o_row": Out(stream.Signature(data.ArrayLayout(signed(out_width), lanes))),
            "mode": In(2),
            "multiplier": In(data.ArrayLayout(signed(32), 2)),
            "zero_in": In(data.ArrayLayout(signed(8), 2)),
            "shift": In(signed(6)),
            "zero_out": In(signed(out_width)),
            "lo": In(signed(out_width)),
            "hi": In(signed(out_width)),
        })

    @staticmethod
    def product_shapes(input_width: int) -> dict[str, tuple[int, int]]:
        """The unit's multiplications by name, (a width, b width): "scale" (stage 2: x - zero_in
        times the multiplier) and "product" (PRODUCT's stage 3b: the factor times t)."""
        diff_width = max(input_width, 8) + 1
        return {"scale": (diff_width, 32), "product": (diff_width, diff_width + 32)}

    def _clamp_copies(self, m, is_max):
        """Registered copies of the last stage's parameters, loaded every cycle (read five
        cycles after a group's first element at the earliest): the zero point (0 for MAX), hi,
        lo (or hi when lo > hi) and the bounds lo - zero point and hi - zero point that the
        rounded floor is compared with."""
        ow = self._out_width
        clamp = Signal(data.StructLayout({
            "zero": signed(ow), "low": signed(ow), "high": signed(ow),
            "low_rel": signed(ow + 1), "high_rel": signed(ow + 1)}), name="clamp")
        zero = Mux(is_max, 0, self.zero_out)
        m.d.sync += [
            clamp.zero.eq(zero),
            clamp.low.eq(Mux(self.lo > self.hi, self.hi, self.lo)),
            clamp.high.eq(self.hi),
            clamp.low_rel.eq(self.lo - zero),
            clamp.high_rel.eq(self.hi - zero),
        ]
        return clamp

    def elaborate(self, platform):
        m = Module()
        lanes, iw, ow = self._lanes, self._input_width, self._out_width
        diff_width, _ = self.product_shapes(iw)["scale"]
        product_width = diff_width + 32
        sum_width = product_width + _COUNT_BITS
        floor_max, floor_min = 2**ow - 1, -(2**ow) - 1

        def lanes_of(width):
            return data.ArrayLayout(signed(width), lanes)

        s1 = Signal(data.StructLayout({"x": lanes_of(iw), "d": lanes_of(diff_width),
                                       "multiplier": signed(32), "sel": 1, "first": 1,
                                       "last": 1}))
        s2a = Signal(data.StructLayout({"x": lanes_of(iw), "first": 1, "last": 1}))
        s2 = Signal(data.StructLayout({"x": lanes_of(iw), "p": lanes_of(product_width),
                                       "first": 1, "last": 1}))
        running = Signal(lanes_of(sum_width))
        s3 = Signal(data.StructLayout({"t": lanes_of(sum_width), "factor": lanes_of(diff_width)}))
        s3b = Signal(lanes_of(sum_width))  # PRODUCT only: t * factor (summed in stage 3c)
        keep = ow + WINDOW_MARGIN  # coarse_shift's window: saturates beyond the floor range
        s4 = Signal(data.StructLayout({"window": lanes_of(keep), "sticky": data.ArrayLayout(1, lanes)}))
        s5 = Signal(data.StructLayout({"floor": lanes_of(ow + 2), "round_up": data.ArrayLayout(1, lanes)}))
        amount = Signal(6, name="amount")  # MAX: 0 (the max itself), else 31 + shift
        valid = [Signal(name=f"valid{k}") for k in range(1, LATENCY + 1)]
        valid_product = [Signal(name=f"valid_product{k}") for k in range(2)]  # stages 3b, 3c

        is_max = Signal(name="is_max")
        is_product = Signal(name="is_product")
        # Stage 2 and later read registered copies of the mode, loaded every cycle: `mode` is
        # held from before a group's first element enters, so an element reaching stage 2 (two
        # cycles after it entered) sees its own mode, and the mode's decode outside the unit
        # no longer runs into stage 3's sum and stage 4's coarse shift
        late_max, late_product = Signal(name="late_max"), Signal(name="late_product")
        advance = Signal()
        m.d.sync += [late_max.eq(self.mode == MAX), late_product.eq(self.mode == PRODUCT)]
        m.d.comb += [
            is_max.eq(self.mode == MAX),
            is_product.eq(self.mode == PRODUCT),
            advance.eq(~valid[-1] | self.o_row.ready),
            self.i_elem.ready.eq(advance),
            self.o_row.valid.eq(valid[-1]),
        ]
        m.d.sync += amount.eq(Mux(is_max, 0, (self.shift + 31).as_unsigned()[:6]))
        bounds = clamp_bounds(m, amount[:_FINE_BITS], floor_min, floor_max)
        clamp = self._clamp_copies(m, is_max)
        elem = self.i_elem.payload
        total = [Signal(signed(sum_width), name=f"total{i}") for i in range(lanes)]
        for i in range(lanes):
            previous = Mux(s2.first, 0, running[i])
            # MAX: `running` holds one of the group's inputs, so its low iw bits are the value
            # and the comparison is iw bits wide (not sum_width: its carry chain and the fan-out
            # of its result to every sum bit were stage 3's critical path)
            held = running[i][:iw].as_signed()
            larger = Mux(s2.first | (s2.x[i] > held), s2.x[i], held)
            kept = Mux(s2.first, s2.p[i], running[i])
            m.d.comb += total[i].eq(
                Mux(late_max, larger, Mux(late_product, kept, previous + s2.p[i])))

        multiplier = s1.multiplier  # the element's, chosen in stage 1 (1 for PRODUCT's b)
        # stage 2 registers the products' pieces, stage 2b their sum
        scaled = [self._product_pieces(m, "scale", i, s1.d[i], multiplier, product_width,
                                       advance) for i in range(lanes)]
        # PRODUCT: t is (a - zero_in[0]) * multiplier[0], product_width bits; stage 3b
        # registers the pieces of t * factor, stage 3c their sum
        products = [self._product_pieces(m, "product", i, s3.factor[i],
                                         s3.t[i][:product_width].as_signed(), sum_width,
                                         advance) for i in range(lanes)]
        with m.If(advance):
            m.d.sync += [
                valid[0].eq(self.i_elem.valid),
                valid[1].eq(valid[0]),
                valid[2].eq(valid[1]),
                valid[3].eq(valid[2] & s2.last),
                valid_product[0].eq(valid[3] & late_product),
                valid_product[1].eq(valid_product[0]),
                valid[4].eq(Mux(late_product, valid_product[1], valid[3])),
                valid[5].eq(valid[4]),
                valid[6].eq(valid[5]),
                s1.sel.eq(elem.sel), s1.first.eq(elem.first), s1.last.eq(elem.last),
                s1.multiplier.eq(Mux(is_product & elem.sel, 1, self.multiplier[elem.sel])),
                s2a.first.eq(s1.first), s2a.last.eq(s1.last),
                s2.first.eq(s2a.first), s2.last.eq(s2a.last),
            ]
            zero_in = self.zero_in[elem.sel]
            for i in range(lanes):
                m.d.sync += [
                    s1.x[i].eq(elem.data[i]),
                    s1.d[i].eq(elem.data[i] - zero_in),
                    s2a.x[i].eq(s1.x[i]),
                    s2.x[i].eq(s2a.x[i]),
                    s2.p[i].eq(scaled[i]),
                ]
                with m.If(valid[2]):
                    m.d.sync += running[i].eq(total[i])
                m.d.sync += [
                    s3.t[i].eq(total[i]),
                    s3.factor[i].eq(s2.p[i]),
                    s3b[i].eq(products[i]),
                ]
                reduced = Mux(late_product, s3b[i], s3.t[i])
                window, sticky = coarse_shift(reduced, amount[_FINE_BITS:], keep)
                m.d.sync += [s4.window[i].eq(window), s4.sticky[i].eq(sticky)]
                floor, round_up = fine_round_clamped(s4.window[i], s4.sticky[i],
                                                     amount[:_FINE_BITS], bounds, floor_min,
                                                     floor_max)
                m.d.sync += [s5.floor[i].eq(floor), s5.round_up[i].eq(round_up)]
                # clamp(v + zero point, lo, hi) with the comparisons beside the adder
                rounded = s5.floor[i] + s5.round_up[i]
                m.d.sync += self.o_row.payload[i].eq(Mux(
                    rounded < clamp.low_rel, clamp.low,
                    Mux(rounded > clamp.high_rel, clamp.high, rounded + clamp.zero)))
        return m

    def _product_pieces(self, m, name, lane, a, b, width, enable):
        """Register, while `enable`, the DSP-sized partial products of a * b
        (`dsp_product.partial_products`: one 18 x 18 multiplier each, its output registered) or,
        when `name` is among `external_products`, the outside product as one piece; return
        their sum as a signed `width`-bit value, for the next stage to register."""
        if name in self.external_products:
            pieces = [(multiply(m, self, name, lane, a, b), 0)]
        else:
            pieces = partial_products(a, b)
        held = [Signal(signed(len(p)), name=f"{name}{lane}_piece{k}")
                for k, (p, _) in enumerate(pieces)]
        with m.If(enable):
            m.d.sync += [r.eq(p) for r, (p, _) in zip(held, pieces, strict=True)]
        return sum_partials(held, [k for _, k in pieces], width)
