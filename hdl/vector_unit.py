"""`VectorUnit`: reduces groups of rows (POOL's windows, ADD's operand pairs) to int8 rows."""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.round_shift import round_shift_parts
from systolic.hdl.shared_multipliers import multiply, operands_layout, products_layout

__all__ = [
    "LATENCY", "MAX", "PRODUCT", "PRODUCT_LATENCY", "SCALED_SUM", "VectorUnit", "element_layout",
]

LATENCY = 5
"""Cycles from a group's last element transfer on `i_elem` to its row's `o_row.valid` (MAX,
SCALED_SUM)."""

PRODUCT_LATENCY = 6
"""The same in PRODUCT mode (one more stage: the second multiplication)."""

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
        the pipeline is empty (the STORE unit runs one instruction at a time).
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

    The parameters are read combinationally by the stage that needs them: hold them from a
    group's first element until its row has left `o_row`.

    Latency, throughput and backpressure
    ------------------------------------
    One element per cycle. Five stages: (1) x - zero_in, (2) product, (3) group sum or max,
    (4) rounding shift with the floor saturated to out_width + 2 bits, (5) zero point and
    clamp. A group whose last element transfers in cycle t has its row valid on `o_row` in
    cycle t + LATENCY (5). PRODUCT has a sixth stage between (3) and (4): stage (2) turns a
    into (a - zero_in[0]) * multiplier[0] and b into b - zero_in[1] (its multiplier replaced
    by 1), stage (3) keeps the first and registers the second beside it, stage (3b) multiplies
    them; its rows are valid in cycle t + PRODUCT_LATENCY (6). The whole pipeline holds while
    `o_row` has an untaken row: `i_elem.ready = ~o_row.valid | o_row.ready`.

    Cost per lane
    -------------
    An (input_width + 1)-bit subtractor, a signed (input_width + 1) x 32 multiplier, an
    (input_width + 65)-bit accumulator (adder, comparator for the max), a rounding shifter of
    that width (round_shift_parts) and two (out_width + 3)-bit adders with four comparators.
    PRODUCT adds a signed (input_width + 33) x (input_width + 1) multiplier (41 x 9 bits for
    int8), an (input_width + 1)-bit and an (input_width + 65)-bit register, and a mux in front
    of the shifter.
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
                                       "sel": 1, "first": 1, "last": 1}))
        s2 = Signal(data.StructLayout({"x": lanes_of(iw), "p": lanes_of(product_width),
                                       "first": 1, "last": 1}))
        running = Signal(lanes_of(sum_width))
        s3 = Signal(data.StructLayout({"t": lanes_of(sum_width), "factor": lanes_of(diff_width)}))
        s3b = Signal(lanes_of(sum_width))  # PRODUCT only: t * factor
        s4 = Signal(data.StructLayout({"floor": lanes_of(ow + 2), "round_up": data.ArrayLayout(1, lanes)}))
        valid = [Signal(name=f"valid{k}") for k in range(1, LATENCY + 1)]
        valid_product = Signal()

        is_max = Signal(name="is_max")
        is_product = Signal(name="is_product")
        advance = Signal()
        m.d.comb += [
            is_max.eq(self.mode == MAX),
            is_product.eq(self.mode == PRODUCT),
            advance.eq(~valid[-1] | self.o_row.ready),
            self.i_elem.ready.eq(advance),
            self.o_row.valid.eq(valid[-1]),
        ]
        elem = self.i_elem.payload
        total = [Signal(signed(sum_width), name=f"total{i}") for i in range(lanes)]
        for i in range(lanes):
            previous = Mux(s2.first, 0, running[i])
            larger = Mux(s2.first | (s2.x[i] > running[i]), s2.x[i], running[i])
            kept = Mux(s2.first, s2.p[i], running[i])
            m.d.comb += total[i].eq(
                Mux(is_max, larger, Mux(is_product, kept, previous + s2.p[i])))

        multiplier = Mux(is_product & s1.sel, 1, self.multiplier[s1.sel])
        scaled = [multiply(m, self, "scale", i, s1.d[i], multiplier) for i in range(lanes)]
        # PRODUCT: t is (a - zero_in[0]) * multiplier[0], product_width bits
        products = [multiply(m, self, "product", i, s3.factor[i],
                             s3.t[i][:product_width].as_signed()) for i in range(lanes)]
        with m.If(advance):
            m.d.sync += [
                valid[0].eq(self.i_elem.valid),
                valid[1].eq(valid[0]),
                valid[2].eq(valid[1] & s2.last),
                valid_product.eq(valid[2] & is_product),
                valid[3].eq(Mux(is_product, valid_product, valid[2])),
                valid[4].eq(valid[3]),
                s1.sel.eq(elem.sel), s1.first.eq(elem.first), s1.last.eq(elem.last),
                s2.first.eq(s1.first), s2.last.eq(s1.last),
            ]
            zero_in = self.zero_in[elem.sel]
            amount = (self.shift + 31).as_unsigned()[:6]
            for i in range(lanes):
                m.d.sync += [
                    s1.x[i].eq(elem.data[i]),
                    s1.d[i].eq(elem.data[i] - zero_in),
                    s2.x[i].eq(s1.x[i]),
                    s2.p[i].eq(scaled[i]),
                ]
                with m.If(valid[1]):
                    m.d.sync += running[i].eq(total[i])
                m.d.sync += [
                    s3.t[i].eq(total[i]),
                    s3.factor[i].eq(s2.p[i]),
                    s3b[i].eq(products[i]),
                ]
                reduced = Mux(is_product, s3b[i], s3.t[i])
                floor, round_up = round_shift_parts(reduced, amount)
                chosen = Mux(is_max, reduced, floor)
                raised = Mux(chosen < floor_min, floor_min, chosen)
                m.d.sync += [
                    s4.floor[i].eq(Mux(raised > floor_max, floor_max, raised)),
                    s4.round_up[i].eq(Mux(is_max, 0, round_up)),
                ]
                offset = s4.floor[i] + s4.round_up[i] + Mux(is_max, 0, self.zero_out)
                low = Mux(offset < self.lo, self.lo, offset)
                m.d.sync += self.o_row.payload[i].eq(Mux(low > self.hi, self.hi, low))
        return m
