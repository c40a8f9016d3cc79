"""`Mesh`: a rows x cols grid of processing elements and the registers between them.

The grid is flat: every PE is written into the mesh's own module by its class's `emit` method
(the same logic the stand-alone PE components run), which keeps the Amaranth simulator fast.
Every PE output is a register, so a value moves one PE per cycle, east or south.

Timing, in both dataflows: a value placed on row `r` of `i_west` in cycle `t` is used by PE
`(r, c)` in cycle `t + c`; a value placed on column `c` of `i_north` in cycle `t` is used by PE
`(r, c)` in cycle `t + r`. The caller skews its inputs (row `r` and column `c` `r` and `c`
cycles late) so that matching operands meet.
"""

from amaranth import Cat, Const, Module, Value, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from systolic.config import Dataflow
from systolic.hdl.pe import (
    OutputStationaryPE,
    WeightStationaryPE,
    os_west_layout,
    weight_lane_layout,
    ws_west_layout,
)
from systolic.hdl.pe_both import BothPE

__all__ = ["Mesh"]


class Mesh(wiring.Component):
    """A rows x cols array of PEs of one dataflow.

    Weight-stationary (`Dataflow.WS`): PE `(k, n)` holds weight `B[k, n]`. Activations travel
    east, partial sums south (row 0 starts from zero), preload weights south along the lanes.
    If `A[m, k]` enters row `k` of `i_west` in cycle `t + k`, column `n` of `o_south` carries
    `sum_k A[m, k] * B[k, n]` (modulo `2**acc_width`) in cycle `t + rows + n`. A preload entry
    for row `k` that enters column `n` of `i_north` in cycle `t` is in PE `(k, n)`'s shadow
    register from cycle `t + k + 1`; an activation with `flip` that reaches PE `(k, n)` in
    cycle `t` multiplies with that shadow weight and makes it active.

    Output-stationary (`Dataflow.OS`): PE `(i, j)` accumulates `C[i, j]`. Activations travel
    east, weights south. If `A[i, k]` enters row `i` of `i_west` in cycle `t + i` and `B[k, j]`
    enters column `j` of `i_north` in cycle `t + j`, PE `(i, j)` multiplies them in cycle
    `t + i + j`. When the entry for the tile's final k carries `last` (cycle `t`), column `j` of
    `o_south` carries the finished `C[i, j]` in cycle `t + j + 2 * rows - i`: bottom row first,
    one row per cycle. The drain chain holds `rows` results per column, so the ends of two
    tiles must enter at least `rows` cycles apart.

    Both (`Dataflow.BOTH`): `BothPE`s with the WS ports (`ws_west_layout`, whose flag is `flip`
    in WS and `last` in OS; `weight_lane_layout`, whose `data` is the OS weight with `valid`
    0) and `i_os`, the mode of every PE: each cycle the grid behaves as the WS or the OS mesh
    above, with the timing above; change `i_os` only when no operand of the other dataflow is
    in the grid.

    Parameters
    ----------
    dataflow:
        `Dataflow.WS`, `Dataflow.OS` or `Dataflow.BOTH`.
    rows, cols:
        Size of the grid.
    input_width, weight_width, acc_width:
        Signed widths of activations, weights and sums (`acc_width >= input_width +
        weight_width`).

    Members
    -------
    i_west: In(data.ArrayLayout(west, rows))
        One activation per row: `ws_west_layout` (data, flip) or `os_west_layout` (data, last).
    i_north: In(data.ArrayLayout(north, cols))
        One entry per column: a preload lane entry (`weight_lane_layout`: valid, row, data) in
        WS, a weight (`signed(weight_width)`) in OS.
    o_south: Out(data.ArrayLayout(signed(acc_width), cols))
        Registered bottom-row outputs: partial sums (WS) or the drain chain (OS).
    i_os: In(1)
        BOTH only: 1 runs the output-stationary dataflow, 0 the weight-stationary one.

    No flow control: every register advances every cycle (stall the mesh with `EnableInserter`).
    """

    def __init__(self, dataflow: Dataflow, *, rows: int, cols: int, input_width: int,
                 weight_width: int, acc_width: int) -> None:
        if rows < 1 or cols < 1:
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"a mesh needs at least one row and one column, not {rows}x{cols}")
        if acc_width < input_width + weight_width:
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"acc_width ({acc_width}) must be at least input_width + "
                             f"weight_width ({input_width + weight_width})")
        self.dataflow = dataflow
        self.rows, self.cols = rows, cols
        self.input_width, self.weight_width, self.acc_width = input_width, weight_width, acc_width
        if dataflow is Dataflow.OS:
            west: object = os_west_layout(input_width)
            north: object = signed(weight_width)
        else:
            west = ws_west_layout(input_width)
            north = weight_lane_layout(weight_width, rows)
        ports = {
            "i_west": In(data.ArrayLayout(west, rows)),
            "i_north": In(data.ArrayLayout(north, cols)),
            "o_south": Out(data.ArrayLayout(signed(acc_width), cols)),
        }
        if dataflow is Dataflow.BOTH:
            ports["i_os"] = In(1)
        super().__init__(ports)

    def elaborate(self, platform: object) -> Module:
        m = Module()
        if self.dataflow is Dataflow.WS:
            bottom = self._elaborate_ws(m)
        elif self.dataflow is Dataflow.OS:
            bottom = self._elaborate_os(m)
        else:
            bottom = self._elaborate_both(m)
        m.d.comb += self.o_south.as_value().eq(Cat(*bottom))
        return m

    def _elaborate_ws(self, m: Module) -> list[Value]:
        west = [(self.i_west[k].data, self.i_west[k].flip) for k in range(self.rows)]
        lanes = [(self.i_north[n].valid, self.i_north[n].row, self.i_north[n].data)
                 for n in range(self.cols)]
        psums: list[Value] = [Const(0, signed(self.acc_width))] * self.cols
        for k in range(self.rows):
            for n in range(self.cols):
                a, flip = west[k]
                lane_valid, lane_row, lane_data = lanes[n]
                out = WeightStationaryPE.emit(
                    m, f"pe_{k}_{n}", row=k, weight_width=self.weight_width,
                    acc_width=self.acc_width, a=a, flip=flip, psum=psums[n],
                    lane_valid=lane_valid, lane_row=lane_row, lane_data=lane_data,
                )
                west[k] = (out.a, out.flip)
                lanes[n] = (out.lane_valid, out.lane_row, out.lane_data)
                psums[n] = out.psum
        return psums

    def _elaborate_os(self, m: Module) -> list[Value]:
        west = [(self.i_west[i].data, self.i_west[i].last) for i in range(self.rows)]
        north: list[Value] = [self.i_north[j] for j in range(self.cols)]
        drains: list[Value] = [Const(0, signed(self.acc_width))] * self.cols
        for i in range(self.rows):
            for j in range(self.cols):
                a, last = west[i]
                out = OutputStationaryPE.emit(
                    m, f"pe_{i}_{j}", acc_width=self.acc_width, a=a, last=last,
                    b=north[j], drain=drains[j],
                )
                west[i] = (out.a, out.last)
                north[j] = out.b
                drains[j] = out.drain
        return drains

    def _elaborate_both(self, m: Module) -> list[Value]:
        west = [(self.i_west[k].data, self.i_west[k].flip) for k in range(self.rows)]
        lanes = [(self.i_north[n].valid, self.i_north[n].row, self.i_north[n].data)
                 for n in range(self.cols)]
        souths: list[Value] = [Const(0, signed(self.acc_width))] * self.cols
        for k in range(self.rows):
            for n in range(self.cols):
                a, flag = west[k]
                lane_valid, lane_row, lane_data = lanes[n]
                out = BothPE.emit(
                    m, f"pe_{k}_{n}", row=k, weight_width=self.weight_width,
                    acc_width=self.acc_width, os=self.i_os, a=a, flag=flag, south=souths[n],
                    lane_valid=lane_valid, lane_row=lane_row, lane_data=lane_data,
                )
                west[k] = (out.a, out.flag)
                lanes[n] = (out.lane_valid, out.lane_row, out.lane_data)
                souths[n] = out.south
        return souths
