"""`SystolicArray`: skew, mesh and deskew behind streams, for either dataflow.

The mesh has no flow control of its own. One signal, `advance`, is the clock enable of every
pipeline register (skews, mesh, deskew, output bookkeeping): it is low exactly when `o_c` holds
a beat its consumer does not take. Inputs are taken only while `advance` is high; in a cycle
that advances without taking an input (an input stream is empty, or the array must wait for
weights or for room in the drain), a bubble enters instead. A bubble never disturbs a tile (WS:
its column sums are discarded; OS: its activations are forced to zero and it never ends a tile),
so results are exact for any pattern of `valid` and `ready`, and the pipeline drains the last
tile without further input.
"""

from typing import NamedTuple

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.hdl import EnableInserter
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.mesh import Mesh
from systolic.hdl.pe import os_west_layout, row_index_shape, weight_lane_layout, ws_west_layout
from systolic.hdl.skew import Deskew, Skew

__all__ = [
    "SystolicArray",
    "a_payload_layout",
    "b_payload_layout",
    "c_payload_layout",
    "weights_payload_layout",
]


def a_payload_layout(config: ArrayConfig) -> data.StructLayout:
    """Return the `i_a` payload: `rows` activations and `last` (the tile's final beat)."""
    return data.StructLayout({
        "data": data.ArrayLayout(signed(config.input_width), config.rows), "last": 1})


def weights_payload_layout(config: ArrayConfig) -> data.StructLayout:
    """Return the `i_weights` payload (WS): one row of a weight tile, `cols` weights."""
    return data.StructLayout({"data": data.ArrayLayout(signed(config.weight_width), config.cols)})


def b_payload_layout(config: ArrayConfig) -> data.StructLayout:
    """Return the `i_b` payload (OS): one row `B[k, 0:cols]`."""
    return data.StructLayout({"data": data.ArrayLayout(signed(config.weight_width), config.cols)})


def c_payload_layout(config: ArrayConfig) -> data.StructLayout:
    """Return the `o_c` payload: `cols` sums and `last`; in OS also `row`, the row of C."""
    fields: dict[str, object] = {
        "data": data.ArrayLayout(signed(config.acc_width), config.cols), "last": 1}
    if config.dataflow.output_stationary:
        fields["row"] = row_index_shape(config.rows)
    return data.StructLayout(fields)


class _Control(NamedTuple):
    """What one dataflow's control drives: the skews' inputs, `i_a.ready` and the `o_c` beat
    (`row`: output-stationary only)."""

    west: Value
    north: Value
    a_ready: Value
    valid: Value
    last: Value
    row: Value | None = None


def _pack(layout: data.StructLayout, **fields: Value | int) -> Value:
    """Return the bits of a `layout` struct whose fields are the given values (integers as
    constants of the field's width)."""
    parts = sorted((field.offset, name, field.width) for name, field in layout)
    return Cat(*(Const(fields[name], width) if isinstance(fields[name], int)
                 else Value.cast(fields[name])[:width] for _, name, width in parts))


class SystolicArray(wiring.Component):
    """C = A·B on a `rows` x `cols` array, weight-stationary or output-stationary.

    Arithmetic: signed `input_width` x `weight_width` products, summed in `acc_width` bits with
    two's-complement wrap-around (the result is the exact sum modulo `2**acc_width`).

    Timing is counted in cycles in which the array advances, that is, cycles in which `o_c` is
    not holding an untaken beat; with an always-ready consumer these are all cycles.

    **Weight-stationary** (`config.dataflow is Dataflow.WS`). A weight tile `B` (`rows` x
    `cols`) is preloaded, `rows` beats on `i_weights`, `B[0]` first, into shadow registers; it
    becomes active with the first beat of the next `i_a` tile, whose beats are rows
    `A[m, 0:rows]`, `last` set on the tile's final row. Each `i_a` beat taken in cycle `t` gives
    one `o_c` beat `C[m, 0:cols] = A[m] · B` in cycle `t + rows + cols - 1`, with the same
    `last`. Throughput: one beat per cycle. The first beat of a tile is taken only once its
    `rows` weight beats have been taken (the last of them in an earlier cycle); the weights of
    the next tile are taken from the cycle the current tile's first beat is taken on. Fed
    continuously, a tile of `M` rows therefore occupies the array for `max(M, rows)` cycles and
    tiles follow each other with no idle cycle when `M >= rows`.

    **Output-stationary** (`Dataflow.OS`). Each beat `k` of a tile is a column `A[0:rows, k]` on
    `i_a` and a row `B[k, 0:cols]` on `i_b`, taken together; `last` on `i_a` marks the tile's
    final k (any `K >= 1`). If that final beat is taken in cycle `T`, `o_c` carries row `i` of
    `C` (`row = i`) in cycle `T + 2 * rows + cols - 1 - i`: `rows` beats in consecutive cycles
    from `T + rows + cols`, bottom row first, `last` on row 0. The final beats of two tiles are
    taken at least `rows` cycles apart (other beats are never held back), so fed continuously
    a tile of `K` beats occupies the array for `max(K, rows)` cycles.

    **Both** (`Dataflow.BOTH`). Every port of both dataflows and `i_os`, the mode: while it
    is 0 the array is the weight-stationary one above (`i_b` is not taken), while it is 1 the
    output-stationary one (`i_weights` is not taken), with the same timing. One mesh of
    `BothPE`s serves both. Change `i_os` only when the array holds no beat of the other
    dataflow: the last `o_c` beat of the other dataflow has been taken and no input of it was
    taken since; the WS weights and the open tile are kept while the array runs OS.

    Backpressure: `advance = ~o_c.valid | o_c.ready`; while it is low every register holds and
    no input is taken. Input `ready` depends combinationally on `o_c.ready` (both dataflows), on
    `i_a.valid` (`i_weights.ready`, WS), on the other operand's `valid` and on
    `i_a.payload.last` (OS); `o_c.valid` and `o_c.payload` come from registers.

    Parameters
    ----------
    config:
        Array size, dataflow and widths (memory sizes are not used here).

    Members
    -------
    i_os: In(1)
        BOTH only: the mode (1 output-stationary).
    i_weights: In(stream.Signature(weights_payload_layout(config)))
        WS (and BOTH) only: weight tile rows `B[k, 0:cols]`, `rows` beats per tile.
    i_a: In(stream.Signature(a_payload_layout(config)))
        Activations, `rows` wide, and `last`.
    i_b: In(stream.Signature(b_payload_layout(config)))
        OS (and BOTH) only: weight rows `B[k, 0:cols]`, one per `i_a` beat.
    o_c: Out(stream.Signature(c_payload_layout(config)))
        Result rows, `cols` wide, with `last` (and `row` in OS and BOTH).
    """

    def __init__(self, config: ArrayConfig) -> None:
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # rejected, not unused
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        self.config = config
        ports = {
            "i_a": In(stream.Signature(a_payload_layout(config))),
            "o_c": Out(stream.Signature(c_payload_layout(config))),
        }
        if config.dataflow.weight_stationary:
            ports["i_weights"] = In(stream.Signature(weights_payload_layout(config)))
        if config.dataflow.output_stationary:
            ports["i_b"] = In(stream.Signature(b_payload_layout(config)))
        if config.dataflow is Dataflow.BOTH:
            ports["i_os"] = In(1)
        super().__init__(ports)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        cfg = self.config
        advance = Signal()
        m.d.comb += advance.eq(~self.o_c.valid | self.o_c.ready)
        mesh = Mesh(cfg.dataflow, rows=cfg.rows, cols=cfg.cols, input_width=cfg.input_width,
                    weight_width=cfg.weight_width, acc_width=cfg.acc_width)
        deskew = Deskew(signed(cfg.acc_width), cfg.cols)
        west_layout = (os_west_layout if cfg.dataflow is Dataflow.OS else ws_west_layout)(
            cfg.input_width)
        north_layout = (signed(cfg.weight_width) if cfg.dataflow is Dataflow.OS
                        else weight_lane_layout(cfg.weight_width, cfg.rows))
        west_skew = Skew(west_layout, cfg.rows)
        north_skew = Skew(north_layout, cfg.cols)
        for name, part in [("west_skew", west_skew), ("north_skew", north_skew), ("mesh", mesh),
                           ("deskew", deskew)]:
            m.submodules[name] = EnableInserter(advance)(part)
        m.d.comb += [
            mesh.i_west.eq(west_skew.o),
            mesh.i_north.eq(north_skew.o),
            deskew.i.eq(mesh.o_south),
            self.o_c.payload.data.eq(deskew.o),
        ]
        if cfg.dataflow is Dataflow.WS:
            control = self._elaborate_ws(m, advance, self.i_a.valid, zero_bubbles=False)
        elif cfg.dataflow is Dataflow.OS:
            control = self._elaborate_os(m, advance, self.i_a.valid)
        else:
            control = self._elaborate_both(m, advance, mesh)
        m.d.comb += [
            west_skew.i.as_value().eq(control.west),
            north_skew.i.as_value().eq(control.north),
            self.i_a.ready.eq(control.a_ready),
            self.o_c.valid.eq(control.valid),
            self.o_c.payload.last.eq(control.last),
        ]
        if control.row is not None:
            m.d.comb += self.o_c.payload.row.eq(control.row)
        return m

    def _elaborate_both(self, m: Module, advance: Signal, mesh: Mesh) -> _Control:
        """Both controls, each seeing `i_a` only in its mode; the skews' inputs, `i_a.ready`
        and the `o_c` beat follow the mode."""
        cfg = self.config
        os = self.i_os
        m.d.comb += mesh.i_os.eq(os)
        ws = self._elaborate_ws(m, advance, self.i_a.valid & ~os, zero_bubbles=True)
        os_control = self._elaborate_os(m, advance, self.i_a.valid & os)
        lane = weight_lane_layout(cfg.weight_width, cfg.rows)
        b_lanes = Cat(*(_pack(lane, valid=0, row=0, data=self.i_b.payload.data[n])
                        for n in range(cfg.cols)))
        return _Control(
            west=Mux(os, os_control.west, ws.west), north=Mux(os, b_lanes, ws.north),
            a_ready=Mux(os, os_control.a_ready, ws.a_ready),
            valid=ws.valid | os_control.valid, last=Mux(os, os_control.last, ws.last),
            row=os_control.row)

    @staticmethod
    def _delay(m: Module, advance: Signal, value: Value, cycles: int, name: str) -> Value:
        """Return `value` from `cycles` advancing cycles earlier."""
        for stage in range(cycles):
            register = Signal(len(value), name=f"{name}_d{stage + 1}")
            with m.If(advance):
                m.d.sync += register.eq(value)
            value = register
        return value

    def _elaborate_ws(self, m: Module, advance: Signal, a_valid: Value, *,
                      zero_bubbles: bool) -> _Control:
        """The weight-stationary control, taking `i_a` beats while `a_valid`; with
        `zero_bubbles` the activations of cycles that take no beat enter as zeros."""
        cfg = self.config
        a_first = Signal(init=1)  # the next i_a beat starts a tile
        loaded = Signal()  # a whole weight tile waits in the shadow registers
        w_row = Signal(row_index_shape(cfg.rows))
        a_take = Signal()
        flip = Signal()
        w_take = Signal()
        w_done = Signal()
        a_ready = Signal(name="ws_a_ready")
        m.d.comb += [
            a_ready.eq(advance & (~a_first | loaded)),
            a_take.eq(a_valid & a_ready),
            flip.eq(a_take & a_first),
            self.i_weights.ready.eq(advance & (~loaded | flip)),
            w_take.eq(self.i_weights.valid & self.i_weights.ready),
            w_done.eq(w_take & (w_row == cfg.rows - 1)),
        ]
        with m.If(a_take):
            m.d.sync += a_first.eq(self.i_a.payload.last)
        with m.If(flip | w_done):
            m.d.sync += loaded.eq(w_done)
        with m.If(w_take):
            m.d.sync += w_row.eq(Mux(w_row == cfg.rows - 1, 0, w_row + 1))

        west = ws_west_layout(cfg.input_width)
        lane = weight_lane_layout(cfg.weight_width, cfg.rows)
        a_data = self.i_a.payload.data.as_value()
        if zero_bubbles:
            a_data = Mux(a_take, a_data, 0)
        width = cfg.input_width
        west_bits = Cat(*(_pack(west, data=a_data[k * width:(k + 1) * width], flip=flip)
                          for k in range(cfg.rows)))
        north_bits = Cat(*(_pack(lane, valid=w_take, row=w_row, data=self.i_weights.payload.data[n])
                           for n in range(cfg.cols)))
        meta = self._delay(m, advance, Cat(a_take, self.i_a.payload.last),
                           cfg.rows + cfg.cols - 1, "meta")
        return _Control(west_bits, north_bits, a_ready, meta[0], meta[1])

    def _elaborate_os(self, m: Module, advance: Signal, a_valid: Value) -> _Control:
        """The output-stationary control, taking `i_a` beats while `a_valid`."""
        cfg = self.config
        gap = Signal(range(cfg.rows + 1), init=cfg.rows)  # cycles since a tile end, saturating
        may_end = Signal()
        take = Signal()
        tile_end = Signal()
        a_ready = Signal(name="os_a_ready")
        m.d.comb += [
            may_end.eq(advance & (~self.i_a.payload.last | (gap == cfg.rows))),
            a_ready.eq(may_end & self.i_b.valid),
            self.i_b.ready.eq(may_end & a_valid),
            take.eq(a_valid & a_ready),
            tile_end.eq(take & self.i_a.payload.last),
        ]
        with m.If(advance):
            with m.If(tile_end):
                m.d.sync += gap.eq(1)
            with m.Elif(gap != cfg.rows):
                m.d.sync += gap.eq(gap + 1)

        west = os_west_layout(cfg.input_width)
        a_bits = Mux(take, self.i_a.payload.data.as_value(), 0)
        width = cfg.input_width
        west_bits = Cat(*(_pack(west, data=a_bits[i * width:(i + 1) * width], last=tile_end)
                          for i in range(cfg.rows)))

        ended = self._delay(m, advance, tile_end, cfg.rows + cfg.cols - 1, "tile_end")
        row = Signal(row_index_shape(cfg.rows))
        valid = Signal(name="os_valid")
        with m.If(advance):
            with m.If(ended):
                m.d.sync += [valid.eq(1), row.eq(cfg.rows - 1)]
            with m.Elif(valid & (row != 0)):
                m.d.sync += row.eq(row - 1)
            with m.Else():
                m.d.sync += valid.eq(0)
        return _Control(west_bits, self.i_b.payload.data.as_value(), a_ready, valid, row == 0,
                        row)
