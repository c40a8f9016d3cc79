"""Processing elements: one signed multiply-accumulate per cycle, every output registered.

Two dataflows, two classes. Each class is a `wiring.Component` that can be simulated and tested
on its own, and each has a static `emit` method that writes the same logic into a module given
as an argument. The `Mesh` builds its grid by calling `emit` once per position, so the whole
array elaborates into one flat module (one submodule per PE is 2-6x slower in the Amaranth
simulator); the component and the mesh therefore run the very same logic. The parts both
classes (and `pe_both.BothPE`) are built from, layouts included, live in `pe_parts`.

Arithmetic: products are exact (`input_width + weight_width` bits, no larger than `acc_width`);
sums wrap around modulo `2**acc_width` (two's complement), as a hardware adder of that width does.
"""

from typing import NamedTuple

from amaranth import Module, Signal, Value, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.pe_parts import (
    Lane,
    WeightLanePE,
    check_pe_parameters,
    emit_os_sum,
    emit_passthrough,
    emit_weights,
    os_registers,
    os_west_layout,
    row_index_shape,
    weight_lane_layout,
    ws_west_layout,
)

__all__ = [
    "OSPEOutputs",
    "OutputStationaryPE",
    "WSPEOutputs",
    "WeightStationaryPE",
    "os_west_layout",
    "row_index_shape",
    "weight_lane_layout",
    "ws_west_layout",
]


class WSPEOutputs(NamedTuple):
    """The registered outputs of one weight-stationary PE, as returned by `emit`."""

    a: Signal
    flip: Signal
    psum: Signal
    lane_valid: Signal
    lane_row: Signal
    lane_data: Signal


class WeightStationaryPE(WeightLanePE):
    """Weight-stationary PE: `o_psum <= i_psum + i_a * weight`, with a double-buffered weight.

    The active weight multiplies every activation. The shadow weight is loaded from the preload
    lane (`i_lane`) when a valid lane entry addressed to this PE's `row` passes. An activation
    with `flip` set uses the shadow weight and makes it the active one from then on, so the
    first activation of a new tile already multiplies with the new weight.

    Parameters
    ----------
    row:
        The preload row this PE captures (its row in the array).
    input_width, weight_width, acc_width:
        Signed widths of activations, weights and partial sums.
    rows:
        Rows in the array (sets the width of the lane's row field).

    Members
    -------
    i_a: In(ws_west_layout(input_width))
        Activation and flip bit from the west.
    i_psum: In(signed(acc_width))
        Partial sum from the north.
    i_lane: In(weight_lane_layout(weight_width, rows))
        Preload weight from the north.
    o_a: Out(ws_west_layout(input_width))
        `i_a`, one cycle later (to the east).
    o_psum: Out(signed(acc_width))
        `i_psum + i_a.data * weight` (modulo `2**acc_width`), one cycle later (to the south).
    o_lane: Out(weight_lane_layout(weight_width, rows))
        `i_lane`, one cycle later (to the south).

    Latency one cycle on every path; one multiply-accumulate per cycle; no flow control.
    """

    def __init__(self, *, row: int, input_width: int, weight_width: int, acc_width: int,
                 rows: int) -> None:
        super().__init__(row=row, input_width=input_width, weight_width=weight_width,
                         acc_width=acc_width, rows=rows, sums="psum")  # fmt: skip

    @staticmethod
    def emit(m: Module, name: str, *, row: int, weight_width: int, acc_width: int,
             a: Value, flip: Value, psum: Value, lane_valid: Value, lane_row: Value,
             lane_data: Value) -> WSPEOutputs:
        """Write one weight-stationary PE into `m` (sync domain) and return its outputs."""
        lane = Lane(lane_valid, lane_row, lane_data)
        weight = emit_weights(m, name, row=row, weight_width=weight_width, flip=flip, lane=lane)
        through = emit_passthrough(m, name, "flip", a=a, flag=flip, lane=lane)
        out_psum = Signal(signed(acc_width), name=f"{name}_psum")
        m.d.sync += out_psum.eq(psum + a * weight)
        return WSPEOutputs(through.a, through.flag, out_psum, *through.lane)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        out = self.emit(
            m, "pe", row=self.row, weight_width=self.weight_width, acc_width=self.acc_width,
            a=self.i_a.data, flip=self.i_a.flip, psum=self.i_psum,
            lane_valid=self.i_lane.valid, lane_row=self.i_lane.row, lane_data=self.i_lane.data,
        )
        self._drive_outputs(m, self.o_psum, out)
        return m


class OSPEOutputs(NamedTuple):
    """The registered outputs of one output-stationary PE, as returned by `emit`."""

    a: Signal
    last: Signal
    b: Signal
    drain: Signal


class OutputStationaryPE(wiring.Component):
    """Output-stationary PE: `acc <= acc + i_a * i_b`, with a double-buffered result.

    On an activation with `last` set the PE ends its sum: `acc + a * b` goes into the result
    register and `acc` restarts from zero, so the next tile's first product follows with no
    pause. Results leave through a drain chain of two registers per PE: each cycle the result
    register takes the value arriving from the north (`i_drain`) unless it is loading its own
    result, and `o_drain` takes the result register. A column of these PEs thus shifts finished
    results south, bottom row first, one per cycle.

    Parameters
    ----------
    input_width, weight_width, acc_width:
        Signed widths of activations (from the west), weights (from the north) and sums.

    Members
    -------
    i_a: In(os_west_layout(input_width))
        Activation and last bit from the west.
    i_b: In(signed(weight_width))
        Weight from the north.
    i_drain: In(signed(acc_width))
        Drain chain input from the north.
    o_a: Out(os_west_layout(input_width))
        `i_a`, one cycle later (to the east).
    o_b: Out(signed(weight_width))
        `i_b`, one cycle later (to the south).
    o_drain: Out(signed(acc_width))
        Drain chain output (to the south): two cycles after `i_drain`, or two cycles after the
        `last` product for this PE's own result.

    One multiply-accumulate per cycle; sums wrap modulo `2**acc_width`; no flow control.
    """

    def __init__(self, *, input_width: int, weight_width: int, acc_width: int) -> None:
        check_pe_parameters(self, input_width=input_width, weight_width=weight_width,
                            acc_width=acc_width)  # fmt: skip
        self.input_width, self.weight_width, self.acc_width = input_width, weight_width, acc_width
        super().__init__({
            "i_a": In(os_west_layout(input_width)),
            "i_b": In(signed(weight_width)),
            "i_drain": In(signed(acc_width)),
            "o_a": Out(os_west_layout(input_width)),
            "o_b": Out(signed(weight_width)),
            "o_drain": Out(signed(acc_width)),
        })

    @staticmethod
    def emit(m: Module, name: str, *, acc_width: int, a: Value, last: Value, b: Value,
             drain: Value) -> OSPEOutputs:
        """Write one output-stationary PE into `m` (sync domain) and return its outputs."""
        acc, result = os_registers(name, acc_width)
        out = OSPEOutputs(
            a=Signal(a.shape(), name=f"{name}_a"),
            last=Signal(name=f"{name}_last"),
            b=Signal(b.shape(), name=f"{name}_b"),
            drain=Signal(signed(acc_width), name=f"{name}_drain"),
        )
        m.d.sync += [out.a.eq(a), out.last.eq(last), out.b.eq(b), out.drain.eq(result)]
        emit_os_sum(m, acc, result, last=last, total=acc + a * b, drain=drain)
        return out

    def elaborate(self, platform: object) -> Module:
        m = Module()
        out = self.emit(m, "pe", acc_width=self.acc_width, a=self.i_a.data,
                        last=self.i_a.last, b=self.i_b, drain=self.i_drain)
        m.d.comb += [
            self.o_a.data.eq(out.a),
            self.o_a.last.eq(out.last),
            self.o_b.eq(out.b),
            self.o_drain.eq(out.drain),
        ]
        return m
