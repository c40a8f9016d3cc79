"""`BothPE`: one processing element that runs either dataflow, chosen by a mode input.

The PE of an array built for `Dataflow.BOTH`. It keeps the state of both dataflows (the
weight-stationary active and shadow weights, the output-stationary sum and result) and shares
what the two use one at a time: the multiplier, the adder, the register that carries sums
south (WS partial sums, OS drain chain), the register that carries activations and their one
flag bit east (`flip` in WS, `last` in OS) and the register that carries weights south (WS
preload lanes, OS operands B).

With `os` low it is `WeightStationaryPE`: `south <= south_in + a * weight` with the double-
buffered weight (a `flip` activation multiplies with the shadow weight and makes it active);
the OS sum is kept. With `os` high it is `OutputStationaryPE`: `acc <= acc + a * b` (`b`: the
lane data from the north), a `last` activation moves `acc + a * b` into the result register
and clears `acc`, and `south <= result` while `result` takes `south_in` (the drain chain); the
weights are kept. Preload lane entries (valid, row) are captured into the shadow weight in
either mode, so weights still travelling when the mode changes land where they belong.

The mode is one input for the whole array: the caller changes it only when no operand of the
other dataflow is left in the array (the EXECUTE unit drains it first), and keeps activations
that carry no work at zero so that a leftover bubble multiplies to nothing in either mode.
"""

from typing import NamedTuple

from amaranth import Module, Mux, Signal, Value, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.pe import weight_lane_layout, ws_west_layout

__all__ = ["BothPE", "BothPEOutputs"]


class BothPEOutputs(NamedTuple):
    """The registered outputs of one PE of either dataflow, as returned by `emit`."""

    a: Signal
    flag: Signal
    south: Signal
    lane_valid: Signal
    lane_row: Signal
    lane_data: Signal


class BothPE(wiring.Component):
    """A PE that runs the weight-stationary (`i_os` low) or output-stationary dataflow.

    Parameters
    ----------
    row:
        The preload row this PE captures (its row in the array).
    input_width, weight_width, acc_width:
        Signed widths of activations, weights and sums.
    rows:
        Rows in the array (sets the width of the lane's row field).

    Members
    -------
    i_os: In(1)
        The mode: 0 weight-stationary, 1 output-stationary.
    i_a: In(ws_west_layout(input_width))
        Activation and its flag (`flip` in WS, `last` in OS) from the west.
    i_south: In(signed(acc_width))
        Partial sum (WS) or drain chain entry (OS) from the north.
    i_lane: In(weight_lane_layout(weight_width, rows))
        Preload weight (WS) or operand B in `data` (OS, `valid` 0) from the north.
    o_a, o_south, o_lane:
        The registered outputs to the east and south (see the module docstring).

    Latency one cycle on every path; one multiply-accumulate per cycle; no flow control.
    """

    def __init__(self, *, row: int, input_width: int, weight_width: int, acc_width: int,
                 rows: int) -> None:
        if not 0 <= row < rows:
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"row must be from 0 to rows - 1 ({rows - 1}), not {row}")
        if acc_width < input_width + weight_width:
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"acc_width ({acc_width}) must be at least input_width + "
                             f"weight_width ({input_width + weight_width})")
        self.row = row
        self.input_width, self.weight_width, self.acc_width = input_width, weight_width, acc_width
        self.rows = rows
        super().__init__({
            "i_os": In(1),
            "i_a": In(ws_west_layout(input_width)),
            "i_south": In(signed(acc_width)),
            "i_lane": In(weight_lane_layout(weight_width, rows)),
            "o_a": Out(ws_west_layout(input_width)),
            "o_south": Out(signed(acc_width)),
            "o_lane": Out(weight_lane_layout(weight_width, rows)),
        })

    @staticmethod
    def emit(m: Module, name: str, *, row: int, weight_width: int, acc_width: int, os: Value,
             a: Value, flag: Value, south: Value, lane_valid: Value, lane_row: Value,
             lane_data: Value) -> BothPEOutputs:
        """Write one PE of either dataflow into `m` (sync domain) and return its outputs."""
        active = Signal(signed(weight_width), name=f"{name}_active")
        shadow = Signal(signed(weight_width), name=f"{name}_shadow")
        acc = Signal(signed(acc_width), name=f"{name}_acc")
        result = Signal(signed(acc_width), name=f"{name}_result")
        out = BothPEOutputs(
            a=Signal(a.shape(), name=f"{name}_a"),
            flag=Signal(name=f"{name}_flag"),
            south=Signal(signed(acc_width), name=f"{name}_south"),
            lane_valid=Signal(name=f"{name}_lane_valid"),
            lane_row=Signal(lane_row.shape(), name=f"{name}_lane_row"),
            lane_data=Signal(signed(weight_width), name=f"{name}_lane_data"),
        )
        flip = flag & ~os
        operand = Mux(os, lane_data, Mux(flip, shadow, active))  # one multiplier ...
        total = Signal(signed(acc_width), name=f"{name}_total")
        m.d.comb += total.eq(Mux(os, acc, south) + a * operand)  # ... and one adder
        m.d.sync += [
            out.a.eq(a),
            out.flag.eq(flag),
            out.south.eq(Mux(os, result, total)),
            out.lane_valid.eq(lane_valid),
            out.lane_row.eq(lane_row),
            out.lane_data.eq(lane_data),
        ]
        with m.If(flip):
            m.d.sync += active.eq(shadow)
        with m.If(lane_valid & (lane_row == row)):
            m.d.sync += shadow.eq(lane_data)
        with m.If(os):
            with m.If(flag):
                m.d.sync += [result.eq(total), acc.eq(0)]
            with m.Else():
                m.d.sync += [result.eq(south), acc.eq(total)]
        return out

    def elaborate(self, platform: object) -> Module:
        m = Module()
        out = self.emit(
            m, "pe", row=self.row, weight_width=self.weight_width, acc_width=self.acc_width,
            os=self.i_os, a=self.i_a.data, flag=self.i_a.flip, south=self.i_south,
            lane_valid=self.i_lane.valid, lane_row=self.i_lane.row, lane_data=self.i_lane.data,
        )
        m.d.comb += [
            self.o_a.data.eq(out.a),
            self.o_a.flip.eq(out.flag),
            self.o_south.eq(out.south),
            self.o_lane.valid.eq(out.lane_valid),
            self.o_lane.row.eq(out.lane_row),
            self.o_lane.data.eq(out.lane_data),
        ]
        return m
