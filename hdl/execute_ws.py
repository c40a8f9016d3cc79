"""Weight-stationary half of the EXECUTE unit: PRELOAD and COMPUTE on the systolic array.

A *weight engine* streams PRELOAD rows `spad_wt[row + r]` (`r < rows`; rows `r >= k` and lanes
`>= n` as zeros) into the array's shadow weights, while an *activation engine* streams COMPUTE
rows `spad_in[in_row + i]`. Each engine has an issue stage (the read address) and a read stage
(the row the 1-cycle read returns, offered to the array); it takes new work in the cycle it
issues its current item's last read.

The array runs one open tile: a COMPUTE continues the current tile (same weights), and a
PRELOAD closes it (`last` on the running COMPUTE's final row, or a one-row dummy beat whose
result is discarded) so that the next COMPUTE's first row activates the new weights. After
reset the weight engine loads a zero tile and a dummy activates it (the ISA's initial weights).
The activation engine's items (a COMPUTE of m rows, or a one-row dummy) wait in `nxt`, then
issue from `act`, one row read per cycle. Results: one metadata entry per activation beat, in
order, in a FIFO beside the array; a dummy's result is dropped.

Exact cycles: `systolic.sim.timing.execute_timing` (docs/hardware.md, "EXECUTE unit").
"""

from amaranth import Module, Mux, Signal, Value
from amaranth.lib import data, fifo

from systolic.hdl.instruction_fields import instruction_layout
from systolic.isa.instructions import Compute, Preload

__all__ = ["elaborate_ws"]


def elaborate_ws(m: Module, unit, array) -> Value:
    """Write the weight-stationary sequencer of `unit` (an `ExecuteUnit`, or the view of its
    WS half) driving `array` into `m`; return its idle signal: no weight or activation row
    issued, offered or in the array."""
    return _WsSequencer(unit, array).elaborate(m)


class _WsSequencer:
    """The sequencer's registers and wires, named as in the Verilog, and its logic by part.

    `w_*`: the weight engine's issue stage, `ws_*` its read stage; `act`/`nxt`: the activation
    engine's current and waiting item, `as_*` its read stage. `pending`: a PRELOAD no COMPUTE
    has used yet (the next PRELOAD then needs a dummy to activate it).
    """

    def __init__(self, unit, array) -> None:
        self.unit, self.array, self.cfg = unit, array, unit.config
        word, self.tag = unit.i_instr.payload.payload, unit.i_instr.payload.tag
        self.preload = data.View(instruction_layout(Preload), word)
        self.compute = data.View(instruction_layout(Compute), word)
        self._weight_signals()
        self._activation_signals()
        self._handshake_signals()

    def _weight_signals(self) -> None:
        """Declare the weight engine: issue stage (w_*) and read stage (ws_*)."""
        self.w_busy = Signal(init=1)  # the zero tile after reset
        self.w_addr = Signal.like(self.unit.spad_wt.addr)
        self.w_beat = Signal(range(self.cfg.rows))
        self.w_k = Signal(16)
        self.w_n = Signal(16)
        self.w_tag = Signal(self.unit.tag_width)
        self.w_report = Signal()
        self.ws_valid = Signal()
        self.ws_zero = Signal()
        self.ws_last = Signal()
        self.ws_report = Signal()
        self.ws_n = Signal(16)
        self.ws_tag = Signal(self.unit.tag_width)

    def _activation_signals(self) -> None:
        """Declare the activation engine: items in `nxt` and `act`, read stage (as_*)."""
        tag_width = self.unit.tag_width
        item = data.StructLayout({
            "addr": len(self.unit.spad_in.addr), "count": 32, "dummy": 1, "close": 1,
            "acc_row": 32, "accumulate": 1, "tag": tag_width, "macs": range(self.cfg.pes + 1)})
        self.act = Signal(item, init={"count": 1, "dummy": 1})  # activates the zero tile
        self.a_busy = Signal(init=1)
        self.nxt = Signal(item)
        self.n_valid = Signal()
        self.pending = Signal()
        self.meta = data.StructLayout({  # the accumulator takes only the low bits of a row
            "acc_row": len(self.unit.o_acc.payload.row), "accumulate": 1, "write": 1,
            "final": 1, "tag": tag_width})
        self.as_valid = Signal()
        self.as_last = Signal()
        self.as_dummy = Signal()
        self.as_meta = Signal(self.meta)
        self.as_macs = Signal(range(self.cfg.pes + 1))

    def _handshake_signals(self) -> None:
        """Declare the wires of the engines' advance and the instruction handshake."""
        self.w_advance, self.a_advance, self.w_free, self.a_free, self.n_free = (
            Signal(name=name) for name in ("w_advance", "a_advance", "w_free", "a_free",
                                           "n_free"))
        self.take_preload, self.take_compute, self.needs_dummy = (
            Signal(name=name) for name in ("take_preload", "take_compute", "needs_dummy"))
        self.close_tail, self.close_now = (
            Signal(name=name) for name in ("close_tail", "close_now"))

    def elaborate(self, m: Module) -> Value:
        """Write the handshake, both engines, the event strobes and the results into `m`;
        return the idle signal."""
        self._handshake(m)
        self._weight_engine(m)
        self._take_preload(m)
        self._activation_engine(m)
        self._take_item(m)
        self._events(m)
        return self._results(m)

    def _handshake(self, m: Module) -> None:
        """Take a PRELOAD when the weight engine is free (and, if it needs a dummy, the
        activation engine's wait slot), a COMPUTE when the wait slot is free."""
        cfg, unit, act = self.cfg, self.unit, self.act
        is_preload = self.preload.opcode == Preload.OPCODE
        is_compute = self.compute.opcode == Compute.OPCODE
        m.d.comb += [
            self.w_free.eq(~self.w_busy | ((self.w_beat == cfg.rows - 1) & self.w_advance)),
            self.a_free.eq(~self.a_busy | ((act.count == 1) & self.a_advance)),
            self.n_free.eq(~self.n_valid | self.a_free),
            self.needs_dummy.eq(self.pending | ~(self.n_valid | self.a_busy)),
            unit.i_instr.ready.eq(Mux(is_preload,
                                      self.w_free & (~self.needs_dummy | self.n_free),
                                      is_compute & self.n_free)),
            self.take_preload.eq(unit.i_instr.valid & unit.i_instr.ready & is_preload),
            self.take_compute.eq(unit.i_instr.valid & unit.i_instr.ready & is_compute),
            self.close_tail.eq(self.take_preload & ~self.needs_dummy),
            self.close_now.eq(act.close | (self.close_tail & ~self.n_valid)),
        ]

    def _weight_engine(self, m: Module) -> None:
        """Read one weight row per cycle the engine advances; offer it to the array (zeros
        for rows `>= k` and lanes `>= n`); report the PRELOAD with its last row."""
        cfg, array, spad_wt = self.cfg, self.array, self.unit.spad_wt
        m.d.comb += [
            self.w_advance.eq(~self.ws_valid | array.i_weights.ready),
            spad_wt.addr.eq(self.w_addr),
            spad_wt.en.eq(self.w_advance),
            array.i_weights.valid.eq(self.ws_valid),
        ]
        for j in range(cfg.cols):
            m.d.comb += array.i_weights.payload.data[j].eq(
                Mux(self.ws_zero | (j >= self.ws_n), 0, spad_wt.data[j]))
        with m.If(self.w_advance):
            m.d.sync += self.ws_valid.eq(self.w_busy)
            with m.If(self.w_busy):
                m.d.sync += [
                    self.ws_zero.eq(self.w_beat >= self.w_k), self.ws_n.eq(self.w_n),
                    self.ws_last.eq(self.w_beat == cfg.rows - 1), self.ws_tag.eq(self.w_tag),
                    self.ws_report.eq(self.w_report),
                ]
                with m.If(self.w_beat + 1 < self.w_k):
                    m.d.sync += self.w_addr.eq(self.w_addr + 1)
                with m.If(self.w_beat == cfg.rows - 1):
                    m.d.sync += [self.w_busy.eq(0), self.w_beat.eq(0)]
                with m.Else():
                    m.d.sync += self.w_beat.eq(self.w_beat + 1)

    def _take_preload(self, m: Module) -> None:
        """Start the weight engine on a PRELOAD taken; report its completion when the array
        takes its last row."""
        preload, array = self.preload, self.array
        with m.If(self.take_preload):
            m.d.sync += [
                self.w_busy.eq(1), self.w_addr.eq(preload.row), self.w_beat.eq(0),
                self.w_k.eq(preload.k),
                self.w_n.eq(preload.n),
                self.w_tag.eq(self.tag), self.w_report.eq(1), self.pending.eq(1),
            ]
        m.d.comb += [
            self.unit.o_preload_done.valid.eq(
                self.ws_valid & array.i_weights.ready & self.ws_last & self.ws_report),
            self.unit.o_preload_done.tag.eq(self.ws_tag),
        ]

    def _activation_engine(self, m: Module) -> None:
        """Read one activation row of `act` per cycle the engine advances and offer it to
        the array (zeros for a dummy) with its result's metadata; `last` closes the tile."""
        cfg, array, act, spad_in = self.cfg, self.array, self.act, self.unit.spad_in
        m.d.comb += [
            self.a_advance.eq(~self.as_valid | array.i_a.ready),
            spad_in.addr.eq(act.addr),
            spad_in.en.eq(self.a_advance),
            array.i_a.valid.eq(self.as_valid),
            array.i_a.payload.last.eq(self.as_last),
        ]
        for r in range(cfg.rows):
            m.d.comb += array.i_a.payload.data[r].eq(Mux(self.as_dummy, 0, spad_in.data[r]))
        meta = self.as_meta
        with m.If(self.a_advance):
            m.d.sync += self.as_valid.eq(self.a_busy)
            with m.If(self.a_busy):
                m.d.sync += [
                    self.as_last.eq((act.count == 1) & self.close_now),
                    self.as_dummy.eq(act.dummy),
                    meta.acc_row.eq(act.acc_row), meta.accumulate.eq(act.accumulate),
                    meta.write.eq(~act.dummy), meta.final.eq((act.count == 1) & ~act.dummy),
                    meta.tag.eq(act.tag), self.as_macs.eq(act.macs),
                    act.addr.eq(act.addr + 1), act.count.eq(act.count - 1),
                    act.acc_row.eq(act.acc_row + 1),
                ]
                with m.If(act.count == 1):
                    m.d.sync += self.a_busy.eq(0)

    def _take_item(self, m: Module) -> None:
        """Move the waiting item into `act` when it is free; mark the tile's tail to close on
        a PRELOAD taken without a dummy; queue a dummy (PRELOAD) or a COMPUTE in `nxt`."""
        act, nxt, compute, cfg = self.act, self.nxt, self.compute, self.cfg
        with m.If(self.a_free & self.n_valid):  # move the waiting item in (the tail if n_valid)
            m.d.sync += [act.eq(nxt), act.close.eq(nxt.close | self.close_tail),
                         self.a_busy.eq(1), self.n_valid.eq(0)]
        with m.Elif(self.close_tail & self.n_valid):
            m.d.sync += nxt.close.eq(1)
        with m.Elif(self.close_tail):
            m.d.sync += act.close.eq(1)
        with m.If(self.take_preload & self.needs_dummy):
            m.d.sync += [nxt.eq(0), nxt.count.eq(1), nxt.dummy.eq(1), nxt.close.eq(1),
                         self.n_valid.eq(1)]
        with m.If(self.take_compute):
            m.d.sync += [
                self.n_valid.eq(1), nxt.dummy.eq(0), nxt.close.eq(0), self.pending.eq(0),
                nxt.addr.eq(compute.in_row),
                nxt.count.eq(compute.m),
                nxt.acc_row.eq(compute.acc_row),
                nxt.accumulate.eq(compute.accumulate),
                nxt.tag.eq(self.tag),
                nxt.macs.eq(self.w_k[:cfg.rows.bit_length()] * self.w_n[:cfg.cols.bit_length()]),
            ]

    def _events(self, m: Module) -> None:
        """Drive the energy event strobes (docs/energy.md, "RTL counters"): a beat is a
        COMPUTE row the array takes (not a dummy), with the products of the current weights."""
        array, events = self.array, self.unit.o_events
        beat = array.i_a.valid & array.i_a.ready & ~self.as_dummy
        m.d.comb += [
            events.beat.eq(beat),
            events.macs.eq(Mux(beat, self.as_macs, 0)),
            events.spad_in_read.eq(self.a_advance & self.a_busy & ~self.act.dummy),
            events.spad_wt_read.eq(self.w_advance & self.w_busy & (self.w_beat < self.w_k)),
        ]

    def _results(self, m: Module) -> Value:
        """Queue one metadata entry per activation beat the array takes; write each result
        beat to the accumulator per its entry and report a COMPUTE's last; return idle."""
        cfg, array = self.cfg, self.array
        m.submodules.meta_fifo = meta_fifo = fifo.SyncFIFO(
            width=self.meta.size, depth=cfg.rows + cfg.cols + 2)
        entry = data.View(self.meta, meta_fifo.r_data)
        m.d.comb += [
            meta_fifo.w_data.eq(self.as_meta),
            meta_fifo.w_en.eq(self.as_valid & array.i_a.ready),
        ]
        _connect_results(m, array, meta_fifo, entry, self.unit)
        idle = Signal(name="ws_idle")
        m.d.comb += idle.eq(~(self.w_busy | self.ws_valid | self.a_busy | self.n_valid |
                              self.as_valid | meta_fifo.r_rdy))
        return idle


def _connect_results(m: Module, array, meta_fifo: fifo.SyncFIFO, entry: data.View,
                     unit) -> None:
    """Write result beats to the accumulator per their metadata entries; report the last."""
    row_bits = len(unit.o_acc.payload.row)
    m.d.comb += [
        unit.o_acc.valid.eq(array.o_c.valid & entry.write),
        unit.o_acc.payload.row.eq(entry.acc_row[:row_bits]),
        unit.o_acc.payload.accumulate.eq(entry.accumulate),
        unit.o_acc.payload.data.eq(array.o_c.payload.data),
        array.o_c.ready.eq(unit.o_acc.ready | ~entry.write),
        meta_fifo.r_en.eq(array.o_c.valid & array.o_c.ready),
        unit.o_compute_done.valid.eq(array.o_c.valid & array.o_c.ready & entry.final),
        unit.o_compute_done.tag.eq(entry.tag),
    ]
