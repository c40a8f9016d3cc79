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
It is built from the parts of `pe.py`'s two PEs (`pe_parts`): their passthrough registers,
double-buffered weight and output-stationary sum, around one shared multiplier and adder.
"""

from typing import NamedTuple

from amaranth import Module, Mux, Signal, Value, signed
from amaranth.lib.wiring import In

from systolic.hdl import pe_parts

__all__ = ["BothPE", "BothPEOutputs"]


class BothPEOutputs(NamedTuple):
    """The registered outputs of one PE of either dataflow, as returned by `emit`."""

    a: Signal
    flag: Signal
    south: Signal
    lane_valid: Signal
    lane_row: Signal
    lane_data: Signal


class BothPE(pe_parts.WeightLanePE):
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
        super().__init__(row=row, input_width=input_width, weight_width=weight_width,
                         acc_width=acc_width, rows=rows, sums="south", ports={"i_os": In(1)})

    @staticmethod
    def emit(m: Module, name: str, *, row: int, weight_width: int, acc_width: int, os: Value,
             a: Value, flag: Value, south: Value, lane_valid: Value, lane_row: Value,
             lane_data: Value) -> BothPEOutputs:
        """Write one PE of either dataflow into `m` (sync domain) and return its outputs: the
        parts of `pe_parts` with one multiplier and one adder shared by both dataflows."""
        lane = pe_parts.Lane(lane_valid, lane_row, lane_data)
        flip = flag & ~os
        weight = pe_parts.emit_weights(m, name, row=row, weight_width=weight_width, flip=flip,
                                       lane=lane)
        acc, result = pe_parts.os_registers(name, acc_width)
        through = pe_parts.emit_passthrough(m, name, "flag", a=a, flag=flag, lane=lane)
        total = Signal(signed(acc_width), name=f"{name}_total")
        m.d.comb += total.eq(Mux(os, acc, south) + a * Mux(os, lane_data, weight))
        out_south = Signal(signed(acc_width), name=f"{name}_south")
        m.d.sync += out_south.eq(Mux(os, result, total))
        with m.If(os):
            pe_parts.emit_os_sum(m, acc, result, last=flag, total=total, drain=south)
        return BothPEOutputs(through.a, through.flag, out_south, *through.lane)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        out = self.emit(
            m, "pe", row=self.row, weight_width=self.weight_width, acc_width=self.acc_width,
            os=self.i_os, a=self.i_a.data, flag=self.i_a.flip, south=self.i_south,
            lane_valid=self.i_lane.valid, lane_row=self.i_lane.row, lane_data=self.i_lane.data,
        )
        self._drive_outputs(m, self.o_south, out)
        return m
