"""`ExecuteUnit`: PRELOAD / COMPUTE (weight-stationary) and COMPUTE.OS on the systolic array
(one family, or both on an array of `Dataflow.BOTH`).

The exact cycle of every acceptance and completion is `systolic.sim.timing.execute_timing`
(docs/hardware.md, "EXECUTE unit", states the rules).
"""

from amaranth import Module, Mux, Signal, Value
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.accumulator import write_payload_layout
from systolic.hdl.execute_both import elaborate_both
from systolic.hdl.execute_os import elaborate_os
from systolic.hdl.execute_ports import done_layout
from systolic.hdl.instruction_fields import INSTRUCTION_STREAM_LAYOUT, instruction_layout
from systolic.hdl.ports import memory_read_signature, spad_row_layout
from systolic.hdl.systolic_array import SystolicArray
from systolic.isa.instructions import Compute, Preload
from systolic.isa.memories import Memory, depth

__all__ = ["ExecuteUnit", "execute_events_layout"]


def execute_events_layout(config: ArrayConfig) -> data.StructLayout:
    """Return the layout of the EXECUTE unit's event strobes (docs/energy.md, "RTL counters"):
    {beat: an array beat that counts (`rows·cols` slots), macs: its products with an active
    weight and operand, spad_in_read, spad_wt_read: a row read the instruction uses}."""
    return data.StructLayout({"beat": 1, "macs": range(config.pes + 1), "spad_in_read": 1,
                              "spad_wt_read": 1})


class ExecuteUnit(wiring.Component):
    """The EXECUTE unit: reads `spad_in`/`spad_wt`, drives the array, writes the accumulator.

    Instructions arrive in program order on `i_instr` ({`payload`: the word, `tag`}); the unit
    takes one when the engine it needs is free (see the timing model) and reports each
    instruction's completion with its tag. Words of other opcodes are a caller error (never taken).

    Weight-stationary: a *weight engine* streams PRELOAD rows `spad_wt[row + r]` (`r < rows`;
    rows `r >= k` and lanes `>= n` as zeros) into the array's shadow weights, while an
    *activation engine* streams COMPUTE rows `spad_in[in_row + i]`. PRELOAD completes in the
    cycle its last weight row is taken by the array; COMPUTE in the cycle its last result row is
    taken by the accumulator stream. After reset the unit loads a zero weight tile (as the ISA's
    initial weights) and the array runs one open tile: a COMPUTE continues the current tile
    (same weights), and a PRELOAD closes it (`last` on the running COMPUTE's final row, or a
    one-row dummy beat whose result is discarded) so that the next COMPUTE's first row activates
    the new weights. Two PRELOADs in a row: the dummy activates the first one's weights, which no
    COMPUTE can observe before the second one's replace them.

    Output-stationary: see `execute_os.elaborate_os`. Both dataflows (`Dataflow.BOTH`): both
    sequencers on one array of `BothPE`s, the instruction choosing (`execute_both`).

    Members
    -------
    i_instr: In(stream.Signature(INSTRUCTION_STREAM_LAYOUT))
        Instruction words (`payload`) and their table tags, in program order.
    o_preload_done, o_compute_done: Out(done_layout())
        Completion strobes {valid, tag}, one cycle each (a PRELOAD and a COMPUTE may complete
        in the same cycle, hence two).
    spad_in, spad_wt: Out(memory_read_signature(...))
        Read ports (1-cycle synchronous) of the scratchpads; rows of `dim` signed operands.
    o_acc: Out(stream.Signature(write_payload_layout(acc_depth, cols, acc_width)))
        Accumulator writes {row, data, accumulate}; the unit holds while `ready` is low.
    o_events: Out(execute_events_layout(config))
        Energy event strobes of this cycle (observation only): WS `beat` is an array beat of a
        COMPUTE row (not a dummy row), `macs` its `k·n` products with the weights of the last
        PRELOAD taken before that COMPUTE (0 after reset); OS `beat` is every array beat and
        `macs` `m·n`; `spad_in_read`/`spad_wt_read` are the row reads an instruction uses (not
        the idle enables, docs/energy.md).

    Latency, throughput, backpressure: `systolic.sim.timing.execute_timing` gives the exact
    cycles (with an always-ready accumulator): one array row per cycle, PRELOAD overlapping the
    previous COMPUTE, no idle array cycle back to back when `m >= rows` (WS) or every k-chunk is
    at least `m` wide (OS). While `o_acc.ready` is low the array and both engines hold; results
    stay exact. `i_instr.ready` depends combinationally on `i_instr.payload` (the opcode) and on
    the array's input `ready`s (hence on `o_acc.ready`).
    """

    def __init__(self, config: ArrayConfig) -> None:
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # rejected, not unused
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        self.config = config
        self.tag_width = tag_width = INSTRUCTION_STREAM_LAYOUT["tag"].width
        super().__init__({
            "i_instr": In(stream.Signature(INSTRUCTION_STREAM_LAYOUT)),
            "o_preload_done": Out(done_layout(tag_width)),
            "o_compute_done": Out(done_layout(tag_width)),
            "spad_in": Out(memory_read_signature(
                depth(config, Memory.SPAD_IN), spad_row_layout(config.input_width, config.dim))),
            "spad_wt": Out(memory_read_signature(
                depth(config, Memory.SPAD_WT), spad_row_layout(config.weight_width, config.dim))),
            "o_acc": Out(stream.Signature(
                write_payload_layout(config.acc_depth, config.cols, config.acc_width))),
            "o_events": Out(execute_events_layout(config)),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        m.submodules.array = array = SystolicArray(self.config)
        if self.config.dataflow is Dataflow.WS:
            self._elaborate_ws(m, array, self)
        elif self.config.dataflow is Dataflow.OS:
            elaborate_os(m, self, array)
        else:
            elaborate_both(m, self, array, self._elaborate_ws)
        return m

    def _elaborate_ws(self, m: Module, array: SystolicArray, ports: "ExecuteUnit") -> Value:
        """Write the weight-stationary sequencer driving `ports` (this unit, or its WS half's
        view); return its idle signal (see `_elaborate_both`)."""
        cfg = self.config
        word, tag = ports.i_instr.payload.payload, ports.i_instr.payload.tag
        preload = data.View(instruction_layout(Preload), word)
        compute = data.View(instruction_layout(Compute), word)
        is_preload = preload.opcode == Preload.OPCODE
        is_compute = compute.opcode == Compute.OPCODE

        # Weight engine: issue stage (w_*) and read stage (ws_*), `rows` beats per tile.
        w_busy = Signal(init=1)  # the zero tile after reset
        w_addr = Signal.like(ports.spad_wt.addr)
        w_beat = Signal(range(cfg.rows))
        w_k = Signal(16)
        w_n = Signal(16)
        w_tag = Signal(self.tag_width)
        w_report = Signal()
        ws_valid = Signal()
        ws_zero = Signal()
        ws_last = Signal()
        ws_report = Signal()
        ws_n = Signal(16)
        ws_tag = Signal(self.tag_width)

        # Activation engine: items (a COMPUTE of m rows, or a one-row dummy) wait in `nxt`,
        # then issue from `act`, one row read per cycle.
        item = data.StructLayout({
            "addr": len(ports.spad_in.addr), "count": 32, "dummy": 1, "close": 1, "acc_row": 32,
            "accumulate": 1, "tag": self.tag_width, "macs": range(cfg.pes + 1)})
        act = Signal(item, init={"count": 1, "dummy": 1})  # activates the zero tile after reset
        a_busy = Signal(init=1)
        nxt = Signal(item)
        n_valid = Signal()
        pending = Signal()  # a PRELOAD no COMPUTE has used yet
        meta = data.StructLayout({  # the accumulator takes only the low bits of a row number
            "acc_row": len(ports.o_acc.payload.row), "accumulate": 1, "write": 1, "final": 1,
            "tag": self.tag_width})
        as_valid = Signal()
        as_last = Signal()
        as_dummy = Signal()
        as_meta = Signal(meta)
        as_macs = Signal(range(cfg.pes + 1))

        # Engines take new work in the cycle they issue their current item's last read.
        w_advance, a_advance, w_free, a_free, n_free = (Signal(name=name) for name in (
            "w_advance", "a_advance", "w_free", "a_free", "n_free"))
        take_preload, take_compute, needs_dummy, close_tail, close_now = (
            Signal(name=name) for name in (
                "take_preload", "take_compute", "needs_dummy", "close_tail", "close_now"))
        m.d.comb += [
            w_free.eq(~w_busy | ((w_beat == cfg.rows - 1) & w_advance)),
            a_free.eq(~a_busy | ((act.count == 1) & a_advance)),
            n_free.eq(~n_valid | a_free),
            needs_dummy.eq(pending | ~(n_valid | a_busy)),
            ports.i_instr.ready.eq(Mux(is_preload, w_free & (~needs_dummy | n_free),
                                      is_compute & n_free)),
            take_preload.eq(ports.i_instr.valid & ports.i_instr.ready & is_preload),
            take_compute.eq(ports.i_instr.valid & ports.i_instr.ready & is_compute),
            close_tail.eq(take_preload & ~needs_dummy),
            close_now.eq(act.close | (close_tail & ~n_valid)),
        ]

        # -- weight engine
        m.d.comb += [
            w_advance.eq(~ws_valid | array.i_weights.ready),
            ports.spad_wt.addr.eq(w_addr),
            ports.spad_wt.en.eq(w_advance),
            array.i_weights.valid.eq(ws_valid),
        ]
        for j in range(cfg.cols):
            m.d.comb += array.i_weights.payload.data[j].eq(
                Mux(ws_zero | (j >= ws_n), 0, ports.spad_wt.data[j]))
        with m.If(w_advance):
            m.d.sync += ws_valid.eq(w_busy)
            with m.If(w_busy):
                m.d.sync += [
                    ws_zero.eq(w_beat >= w_k), ws_n.eq(w_n), ws_last.eq(w_beat == cfg.rows - 1),
                    ws_tag.eq(w_tag), ws_report.eq(w_report),
                ]
                with m.If(w_beat + 1 < w_k):
                    m.d.sync += w_addr.eq(w_addr + 1)
                with m.If(w_beat == cfg.rows - 1):
                    m.d.sync += [w_busy.eq(0), w_beat.eq(0)]
                with m.Else():
                    m.d.sync += w_beat.eq(w_beat + 1)
        with m.If(take_preload):
            m.d.sync += [
                w_busy.eq(1), w_addr.eq(preload.row), w_beat.eq(0),
                w_k.eq(preload.k),
                w_n.eq(preload.n),
                w_tag.eq(tag), w_report.eq(1), pending.eq(1),
            ]
        m.d.comb += [
            ports.o_preload_done.valid.eq(
                ws_valid & array.i_weights.ready & ws_last & ws_report),
            ports.o_preload_done.tag.eq(ws_tag),
        ]

        # -- activation engine
        m.d.comb += [
            a_advance.eq(~as_valid | array.i_a.ready),
            ports.spad_in.addr.eq(act.addr),
            ports.spad_in.en.eq(a_advance),
            array.i_a.valid.eq(as_valid),
            array.i_a.payload.last.eq(as_last),
        ]
        for r in range(cfg.rows):
            m.d.comb += array.i_a.payload.data[r].eq(Mux(as_dummy, 0, ports.spad_in.data[r]))
        with m.If(a_advance):
            m.d.sync += as_valid.eq(a_busy)
            with m.If(a_busy):
                m.d.sync += [
                    as_last.eq((act.count == 1) & close_now), as_dummy.eq(act.dummy),
                    as_meta.acc_row.eq(act.acc_row), as_meta.accumulate.eq(act.accumulate),
                    as_meta.write.eq(~act.dummy), as_meta.final.eq((act.count == 1) & ~act.dummy),
                    as_meta.tag.eq(act.tag), as_macs.eq(act.macs),
                    act.addr.eq(act.addr + 1), act.count.eq(act.count - 1),
                    act.acc_row.eq(act.acc_row + 1),
                ]
                with m.If(act.count == 1):
                    m.d.sync += a_busy.eq(0)
        with m.If(a_free & n_valid):  # move the waiting item in (it is the tail if n_valid)
            m.d.sync += [act.eq(nxt), act.close.eq(nxt.close | close_tail), a_busy.eq(1),
                         n_valid.eq(0)]
        with m.Elif(close_tail & n_valid):
            m.d.sync += nxt.close.eq(1)
        with m.Elif(close_tail):
            m.d.sync += act.close.eq(1)
        with m.If(take_preload & needs_dummy):
            m.d.sync += [nxt.eq(0), nxt.count.eq(1), nxt.dummy.eq(1), nxt.close.eq(1),
                         n_valid.eq(1)]
        with m.If(take_compute):
            m.d.sync += [
                n_valid.eq(1), nxt.dummy.eq(0), nxt.close.eq(0), pending.eq(0),
                nxt.addr.eq(compute.in_row),
                nxt.count.eq(compute.m),
                nxt.acc_row.eq(compute.acc_row),
                nxt.accumulate.eq(compute.accumulate),
                nxt.tag.eq(tag),
                nxt.macs.eq(w_k[:cfg.rows.bit_length()] * w_n[:cfg.cols.bit_length()]),
            ]
        beat = array.i_a.valid & array.i_a.ready & ~as_dummy
        m.d.comb += [
            ports.o_events.beat.eq(beat),
            ports.o_events.macs.eq(Mux(beat, as_macs, 0)),
            ports.o_events.spad_in_read.eq(a_advance & a_busy & ~act.dummy),
            ports.o_events.spad_wt_read.eq(w_advance & w_busy & (w_beat < w_k)),
        ]

        # -- results: one metadata entry per activation beat, in order
        m.submodules.meta_fifo = meta_fifo = fifo.SyncFIFO(
            width=meta.size, depth=cfg.rows + cfg.cols + 2)
        entry = data.View(meta, meta_fifo.r_data)
        m.d.comb += [
            meta_fifo.w_data.eq(as_meta),
            meta_fifo.w_en.eq(as_valid & array.i_a.ready),
        ]
        self._connect_results(m, array, meta_fifo, entry, ports)
        idle = Signal(name="ws_idle")
        m.d.comb += idle.eq(~(w_busy | ws_valid | a_busy | n_valid | as_valid | meta_fifo.r_rdy))
        return idle

    @staticmethod
    def _connect_results(m: Module, array: SystolicArray, meta_fifo: fifo.SyncFIFO,
                         entry: data.View, ports: "ExecuteUnit") -> None:
        """Write result beats to the accumulator per their metadata entries; report the last."""
        row_bits = len(ports.o_acc.payload.row)
        m.d.comb += [
            ports.o_acc.valid.eq(array.o_c.valid & entry.write),
            ports.o_acc.payload.row.eq(entry.acc_row[:row_bits]),
            ports.o_acc.payload.accumulate.eq(entry.accumulate),
            ports.o_acc.payload.data.eq(array.o_c.payload.data),
            array.o_c.ready.eq(ports.o_acc.ready | ~entry.write),
            meta_fifo.r_en.eq(array.o_c.valid & array.o_c.ready),
            ports.o_compute_done.valid.eq(array.o_c.valid & array.o_c.ready & entry.final),
            ports.o_compute_done.tag.eq(entry.tag),
        ]

