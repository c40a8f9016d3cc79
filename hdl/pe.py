"""Processing elements: one signed multiply-accumulate per cycle, every output registered.

Two dataflows, two classes. Each class is a `wiring.Component` that can be simulated and tested
on its own, and each has a static `emit` method that writes the same logic into a module given
as an argument. The `Mesh` builds its grid by calling `emit` once per position, so the whole
array elaborates into one flat module (one submodule per PE is 2-6x slower in the Amaranth
simulator); the component and the mesh therefore run the very same logic.

Arithmetic: products are exact (`input_width + weight_width` bits, no larger than `acc_width`);
sums wrap around modulo `2**acc_width` (two's complement), as a hardware adder of that width does.
"""

from typing import NamedTuple

from amaranth import Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

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


def row_index_shape(rows: int) -> unsigned:
    """Return the unsigned shape that numbers `rows` rows (at least one bit)."""
    return unsigned(max(1, (rows - 1).bit_length()))


def ws_west_layout(input_width: int) -> data.StructLayout:
    """Return the layout of one activation travelling east in the weight-stationary array.

    `flip` is set on the first activation of a new weight tile: each PE it reaches swaps its
    preloaded (shadow) weight in before multiplying.
    """
    return data.StructLayout({"data": signed(input_width), "flip": 1})


def weight_lane_layout(weight_width: int, rows: int) -> data.StructLayout:
    """Return the layout of one preload weight travelling south in the weight-stationary array.

    The weight is captured into the shadow register of the PE whose row equals `row`.
    """
    return data.StructLayout(
        {"valid": 1, "row": row_index_shape(rows), "data": signed(weight_width)}
    )


def os_west_layout(input_width: int) -> data.StructLayout:
    """Return the layout of one activation travelling east in the output-stationary array.

    `last` is set on the tile's final k: each PE it reaches ends its sum with this product.
    """
    return data.StructLayout({"data": signed(input_width), "last": 1})


class WSPEOutputs(NamedTuple):
    """The registered outputs of one weight-stationary PE, as returned by `emit`."""

    a: Signal
    flip: Signal
    psum: Signal
    lane_valid: Signal
    lane_row: Signal
    lane_data: Signal


class WeightStationaryPE(wiring.Component):
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
            "i_a": In(ws_west_layout(input_width)),
            "i_psum": In(signed(acc_width)),
            "i_lane": In(weight_lane_layout(weight_width, rows)),
            "o_a": Out(ws_west_layout(input_width)),
            "o_psum": Out(signed(acc_width)),
            "o_lane": Out(weight_lane_layout(weight_width, rows)),
        })

    @staticmethod
    def emit(m: Module, name: str, *, row: int, weight_width: int, acc_width: int,
             a: Value, flip: Value, psum: Value, lane_valid: Value, lane_row: Value,
             lane_data: Value) -> WSPEOutputs:
        """Write one weight-stationary PE into `m` (sync domain) and return its outputs."""
        active = Signal(signed(weight_width), name=f"{name}_active")
        shadow = Signal(signed(weight_width), name=f"{name}_shadow")
        out = WSPEOutputs(
            a=Signal(a.shape(), name=f"{name}_a"),
            flip=Signal(name=f"{name}_flip"),
            psum=Signal(signed(acc_width), name=f"{name}_psum"),
            lane_valid=Signal(name=f"{name}_lane_valid"),
            lane_row=Signal(lane_row.shape(), name=f"{name}_lane_row"),
            lane_data=Signal(signed(weight_width), name=f"{name}_lane_data"),
        )
        weight = Mux(flip, shadow, active)
        m.d.sync += [
            out.a.eq(a),
            out.flip.eq(flip),
            out.psum.eq(psum + a * weight),
            out.lane_valid.eq(lane_valid),
            out.lane_row.eq(lane_row),
            out.lane_data.eq(lane_data),
        ]
        with m.If(flip):
            m.d.sync += active.eq(shadow)
        with m.If(lane_valid & (lane_row == row)):
            m.d.sync += shadow.eq(lane_data)
        return out

    def elaborate(self, platform: object) -> Module:
        m = Module()
        out = self.emit(
            m, "pe", row=self.row, weight_width=self.weight_width, acc_width=self.acc_width,
            a=self.i_a.data, flip=self.i_a.flip, psum=self.i_psum,
            lane_valid=self.i_lane.valid, lane_row=self.i_lane.row, lane_data=self.i_lane.data,
        )
        m.d.comb += [
            self.o_a.data.eq(out.a),
            self.o_a.flip.eq(out.flip),
            self.o_psum.eq(out.psum),
            self.o_lane.valid.eq(out.lane_valid),
            self.o_lane.row.eq(out.lane_row),
            self.o_lane.data.eq(out.lane_data),
        ]
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
        if acc_width < input_width + weight_width:
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"acc_width ({acc_width}) must be at least input_width + "
                             f"weight_width ({input_width + weight_width})")
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
        acc = Signal(signed(acc_width), name=f"{name}_acc")
        result = Signal(signed(acc_width), name=f"{name}_result")
        out = OSPEOutputs(
            a=Signal(a.shape(), name=f"{name}_a"),
            last=Signal(name=f"{name}_last"),
            b=Signal(b.shape(), name=f"{name}_b"),
            drain=Signal(signed(acc_width), name=f"{name}_drain"),
        )
        total = acc + a * b
        m.d.sync += [out.a.eq(a), out.last.eq(last), out.b.eq(b), out.drain.eq(result)]
        with m.If(last):
            m.d.sync += [result.eq(total), acc.eq(0)]
        with m.Else():
            m.d.sync += [result.eq(drain), acc.eq(total)]
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
