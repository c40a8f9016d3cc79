"""The output stage: requantizes rows of accumulators to signed `out_width`-bit outputs."""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.round_shift import round_shift_parts

__all__ = ["LATENCY", "MULTIPLIER_WIDTH", "PARAM_WIDTH", "SHIFT_WIDTH", "OutputStage"]

LATENCY = 4
"""Cycles from a row's transfer on `i_acc` to its `o_q.valid`, without backpressure."""

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
    busy : ``Out(1)``
        A row is inside the stage. The parameters are read combinationally in the stage that
        needs them (the shift through a register loaded every cycle, read two cycles after the
        first transfer), so the caller must hold them stable from a tile's first transfer on
        `i_acc` until `busy` falls after its last row left on `o_q`.

    Latency, throughput and backpressure
    ------------------------------------
    Four pipeline stages: (1) x, (2) p, (3) rounding shift and saturation of the floor to
    out_width + 2 bits, (4) round-up, zero point and clamp. A row transferred on `i_acc` in
    cycle t is valid on `o_q` in cycle t + LATENCY (4) when `o_q` is ready; one row per cycle.
    Each stage advances when it is empty or its successor advances, so bubbles collapse and a
    stalled `o_q` fills the pipeline before `i_acc.ready` falls; no row is lost or repeated.
    `i_acc.ready` depends combinationally on `o_q.ready` (a chain of `cols`-independent ORs).

    Cost per lane
    -------------
    One 33-bit adder (for acc_width <= 32), one signed 33 x 32 multiplier producing 65 bits
    (four 18 x 18 DSP multipliers, or two 27 x 18; a synthesis tool should retime stage 2
    across the DSP pipeline registers at high clock rates), a 66-bit arithmetic barrel shifter
    with 6 mux levels plus a 65-bit sticky OR, two (out_width + 3)-bit adders and four
    comparators. Registers: 33 + 65 + (out_width + 3) + out_width bits, plus one valid and one
    `last` bit per stage.

    FPGA note (bench/README.md, "FPGA"): on ECP5 the product maps to four MULT18X18D blocks
    whose partial products are summed by LUT carry chains within stage 2, and stage 3 is a
    66-bit barrel shifter, a 66-bit comparison and the sticky OR: neither fits 10 ns. Splitting
    the product into registered DSP-sized partial products summed in the next stage needs one
    more stage, and the shift another; with LATENCY 4 fixed by the cycle model (STORE's
    `fixed_cycles` K = 3 + LATENCY = 7 in `systolic.sim.timing.store_timing`, the native
    timing engine and docs/cycle-model.md), that is a change of the cycle model, not a retiming.
    """

    def __init__(self, *, cols: int, acc_width: int = 32, out_width: int = 8):
        if not isinstance(cols, int) or cols < 1:
            raise ValueError(f"cols must be a positive integer, not {cols!r}")
        if not isinstance(acc_width, int) or acc_width < 2:
            raise ValueError(f"acc_width must be an integer of at least 2, not {acc_width!r}")
        if not isinstance(out_width, int) or out_width < 2:
            raise ValueError(f"out_width must be an integer of at least 2, not {out_width!r}")
        self._cols = cols
        self._acc_width = acc_width
        self._out_width = out_width
        super().__init__({
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
        floor_max = 2**ow - 1  # any floor beyond +-(2**ow) clamps the same as these bounds
        floor_min = -(2**ow) - 1

        s1 = Signal(_row_layout(signed(sum_width), cols))
        s2 = Signal(_row_layout(signed(product_width), cols))
        s3 = Signal(data.StructLayout({
            "floor": data.ArrayLayout(signed(ow + 2), cols),
            "round_up": data.ArrayLayout(1, cols),
            "last": 1,
        }))
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
            self.busy.eq(valid[0] | valid[1] | valid[2] | valid[3]),
        ]

        acc = self.i_acc.payload
        out = self.o_q.payload
        with m.If(advance[0]):
            m.d.sync += s1.last.eq(acc.last)
            for i in range(cols):
                m.d.sync += s1.data[i].eq(acc.data[i] + self.bias[i])
        with m.If(advance[1]):
            m.d.sync += s2.last.eq(s1.last)
            for i in range(cols):
                m.d.sync += s2.data[i].eq(s1.data[i] * self.multiplier[i])
        # The shift amounts, registered every cycle: a row reaches stage 3 two cycles after its
        # tile's first transfer, and the parameters are stable from that transfer on, so the
        # register holds the tile's amounts by then (the adder leaves the stage's path).
        amounts = [Signal(SHIFT_WIDTH, name=f"amount{i}") for i in range(cols)]
        m.d.sync += [amounts[i].eq((self.shift[i] + 31).as_unsigned()[:SHIFT_WIDTH])
                     for i in range(cols)]
        with m.If(advance[2]):
            m.d.sync += s3.last.eq(s2.last)
            for i in range(cols):
                floor, round_up = round_shift_parts(s2.data[i], amounts[i])
                raised = Mux(floor < floor_min, floor_min, floor)
                saturated = Mux(raised > floor_max, floor_max, raised)
                m.d.sync += [s3.floor[i].eq(saturated), s3.round_up[i].eq(round_up)]
        with m.If(advance[3]):
            m.d.sync += out.last.eq(s3.last)
            for i in range(cols):
                offset = s3.floor[i] + s3.round_up[i] + self.zero_point
                raised = Mux(offset < self.lo, self.lo, offset)
                m.d.sync += out.data[i].eq(Mux(raised > self.hi, self.hi, raised))
        return m
