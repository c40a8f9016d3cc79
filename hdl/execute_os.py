"""Output-stationary half of the EXECUTE unit: COMPUTE.OS through double-buffered A banks.

The array takes, per k, a column `A[0:rows, k]` and a row `B[k, 0:cols]`. `spad_in` holds A by
rows (k-chunks of `dim` operands), so a *loader* reads the `m` rows of one chunk, one per cycle,
into one of two banks of `rows x dim` registers while a *streamer* feeds the columns of the
other bank, one per cycle, together with B's rows read from `spad_wt` (lanes `>= n` and A rows
`>= m` as zeros). The loader starts on a bank in the cycle the streamer issues that bank's last
column, so chunks (of one instruction or of consecutive ones) follow without a gap as long as
each chunk is at least `m` columns wide (a chunk is streamed while the next one loads).
Results: the array's `rows` output beats per tile; rows `i < m` go to `acc[acc_row + i]`, the
others are dropped; the tile completes with row 0 (the array's last).
Exact cycles: `systolic.sim.timing.execute_timing`.
"""

from amaranth import Module, Mux, Signal, Value, signed
from amaranth.lib import data, fifo

from systolic.hdl.instruction_fields import instruction_layout
from systolic.isa.instructions import ComputeOS

__all__ = ["elaborate_os"]


def elaborate_os(m: Module, unit, array) -> Value:
    """Write the output-stationary sequencer of `unit` (an `ExecuteUnit`, or the view of its
    OS half) into `m`; return its idle signal: nothing loaded, streamed or in the array."""
    return _OsSequencer(unit, array).elaborate(m)


class _OsSequencer:
    """The sequencer's registers and wires, named as in the Verilog, and its logic by part.

    `bank{b}`, `bank{b}_chunk`, `bank{b}_full`: the two A banks, the chunk each holds and
    whether it is loaded; `l_*`: the loader (`lw_*` its write stage, one cycle after the read);
    `s_*`: the streamer, `cur` the chunk of its bank, `as_*` the beat it offers the array.
    """

    def __init__(self, unit, array) -> None:
        self.unit, self.array, self.cfg = unit, array, unit.config
        rows, dim = self.cfg.rows, self.cfg.dim
        self.tag = unit.i_instr.payload.tag
        self.instr = data.View(instruction_layout(ComputeOS), unit.i_instr.payload.payload)
        self.tile = data.StructLayout({"acc_row": 32, "m": 16, "accumulate": 1,
                                       "tag": unit.tag_width})
        self.chunk = data.StructLayout({"width": range(dim + 1), "wt": 32, "n": 16, "final": 1,
                                        "tile": self.tile})
        bank_layout = data.ArrayLayout(data.ArrayLayout(signed(self.cfg.input_width), dim), rows)
        self.banks = [Signal(bank_layout, name=f"bank{b}") for b in range(2)]
        self.metas = [Signal(self.chunk, name=f"bank{b}_chunk") for b in range(2)]
        self.full = [Signal(name=f"bank{b}_full") for b in range(2)]
        self.s_bank = Signal()
        self.s_col = Signal(range(dim))
        self.cur = Signal(self.chunk)
        self.s_issue = Signal()
        self.s_advance = Signal()
        self.s_release = Signal()
        self._loader_signals()

    def _loader_signals(self) -> None:
        """Declare the loader: one spad_in row per cycle into bank `l_bank`."""
        self.l_busy = Signal()
        self.l_bank = Signal()
        self.l_addr = Signal(32)
        self.l_base = Signal(32)
        self.l_stride = Signal(32)
        self.l_i = Signal(16)
        self.l_k_left = Signal(32)
        self.l_chunk = Signal(self.chunk)  # width/final are filled in at the chunk's last row
        self.l_issue = Signal()
        self.l_last_row = Signal()
        self.l_final = Signal()
        self.lw_valid = Signal()
        self.lw_bank = Signal()
        self.lw_i = Signal(range(self.cfg.rows))
        self.lw_full = Signal()
        self.take = Signal()

    def _streamer_signals(self) -> None:
        """Declare the streamer's beat: a column of A, B's row, and the tile it belongs to."""
        rows = self.cfg.rows
        self.as_valid = Signal()
        self.as_last = Signal()
        self.as_tile = Signal(self.tile)
        self.as_n = Signal(16)
        self.as_m = Signal(16)
        self.as_macs = Signal(range(self.cfg.pes + 1))
        self.as_column = Signal(data.ArrayLayout(signed(self.cfg.input_width), rows))
        self.column = Signal.like(self.as_column)

    def elaborate(self, m: Module) -> Value:
        """Write the loader, the streamer and the results into `m`; return the idle signal."""
        self._loader_handshake(m)
        self._load_rows(m)
        self._write_banks(m)
        self._streamer_signals()
        self._stream_columns(m)
        self._array_inputs(m)
        tile_fifo = self._results(m)
        self._events(m)
        idle = Signal(name="os_idle")
        m.d.comb += idle.eq(~(self.l_busy | self.lw_valid | self.full[0] | self.full[1] |
                              self.as_valid | tile_fifo.r_rdy))
        return idle

    def _loader_handshake(self, m: Module) -> None:
        """Issue a row read while the loader's bank is free (or is being released); take a
        COMPUTE.OS when the loader is idle or issues the last row of its instruction."""
        unit, instr, full = self.unit, self.instr, self.full
        m.d.comb += [
            # a bank is free, or its last column is taken from it in this cycle (writes land later)
            self.l_issue.eq(self.l_busy & (~Mux(self.l_bank, full[1], full[0]) |
                                           (self.s_release & (self.s_bank == self.l_bank)))),
            self.l_last_row.eq(self.l_i == self.l_chunk.tile.m - 1),
            self.l_final.eq(self.l_k_left <= self.cfg.dim),
            unit.i_instr.ready.eq((instr.opcode == ComputeOS.OPCODE) &
                                  (~self.l_busy | (self.l_issue & self.l_last_row & self.l_final))),
            self.take.eq(unit.i_instr.valid & unit.i_instr.ready),
            unit.spad_in.addr.eq(self.l_addr),
            unit.spad_in.en.eq(1),
        ]
        m.d.sync += [self.lw_valid.eq(self.l_issue), self.lw_bank.eq(self.l_bank),
                     self.lw_i.eq(self.l_i), self.lw_full.eq(self.l_issue & self.l_last_row)]

    def _load_rows(self, m: Module) -> None:
        """Step the loader per row issued; at a chunk's last row hand the chunk to its bank and
        move to the next chunk (`a_stride` on); start on a COMPUTE.OS taken."""
        dim, instr, l_chunk = self.cfg.dim, self.instr, self.l_chunk
        with m.If(self.l_issue):
            m.d.sync += [self.l_addr.eq(self.l_addr + 1), self.l_i.eq(self.l_i + 1)]
            with m.If(self.l_last_row):
                for b in range(2):
                    with m.If(self.l_bank == b):
                        m.d.sync += [self.metas[b].eq(l_chunk),
                                     self.metas[b].width.eq(Mux(self.l_final, self.l_k_left, dim)),
                                     self.metas[b].final.eq(self.l_final)]
                m.d.sync += [self.l_bank.eq(~self.l_bank), self.l_i.eq(0),
                             self.l_base.eq(self.l_base + self.l_stride),
                             self.l_addr.eq(self.l_base + self.l_stride),
                             self.l_k_left.eq(self.l_k_left - dim),
                             l_chunk.wt.eq(l_chunk.wt + dim)]
                with m.If(self.l_final):
                    m.d.sync += self.l_busy.eq(0)
        with m.If(self.take):
            m.d.sync += [
                self.l_busy.eq(1), self.l_i.eq(0), self.l_addr.eq(instr.in_row),
                self.l_base.eq(instr.in_row), self.l_stride.eq(instr.a_stride),
                self.l_k_left.eq(instr.k),
                l_chunk.wt.eq(instr.wt_row), l_chunk.n.eq(instr.n),
                l_chunk.tile.acc_row.eq(instr.acc_row), l_chunk.tile.m.eq(instr.m),
                l_chunk.tile.accumulate.eq(instr.accumulate), l_chunk.tile.tag.eq(self.tag),
            ]

    def _write_banks(self, m: Module) -> None:
        """Write the row read last cycle into its bank; mark the bank full after its last."""
        for b in range(2):
            with m.If(self.lw_valid & (self.lw_bank == b)):
                m.d.sync += self.banks[b][self.lw_i].eq(self.unit.spad_in.data)
                with m.If(self.lw_full):
                    m.d.sync += self.full[b].eq(1)

    def _stream_columns(self, m: Module) -> None:
        """Issue one column of the full bank `s_bank` and its spad_wt row per cycle the
        streamer advances; release the bank (and switch) after the chunk's last column."""
        cfg, rows, cur, s_col = self.cfg, self.cfg.rows, self.cur, self.s_col
        banks, full = self.banks, self.full
        m.d.comb += [
            cur.eq(Mux(self.s_bank, self.metas[1], self.metas[0])),
            self.s_advance.eq(~self.as_valid | self.array.i_a.ready),
            self.s_issue.eq(self.s_advance & Mux(self.s_bank, full[1], full[0])),
            self.unit.spad_wt.addr.eq(cur.wt + s_col),
            self.unit.spad_wt.en.eq(self.s_advance),
        ]
        for i in range(rows):
            m.d.comb += self.column[i].eq(Mux(self.s_bank, banks[1][i][s_col], banks[0][i][s_col]))
        with m.If(self.s_advance):
            m.d.sync += self.as_valid.eq(self.s_issue)
        last_col = s_col == cur.width - 1
        m.d.comb += self.s_release.eq(self.s_issue & last_col)
        with m.If(self.s_issue):
            m.d.sync += [self.as_column.eq(self.column), self.as_last.eq(last_col & cur.final),
                         self.as_tile.eq(cur.tile), self.as_n.eq(cur.n), self.as_m.eq(cur.tile.m),
                         self.as_macs.eq(cur.tile.m[:rows.bit_length()] *
                                         cur.n[:cfg.cols.bit_length()])]
            with m.If(last_col):
                m.d.sync += [s_col.eq(0), self.s_bank.eq(~self.s_bank)]
                for b in range(2):
                    with m.If(self.s_bank == b):
                        m.d.sync += full[b].eq(0)
            with m.Else():
                m.d.sync += s_col.eq(s_col + 1)

    def _array_inputs(self, m: Module) -> None:
        """Offer the beat to the array: A's column (rows `>= m` as zeros) and B's row (lanes
        `>= n` as zeros); `last` ends the tile."""
        array = self.array
        m.d.comb += [
            array.i_a.valid.eq(self.as_valid), array.i_b.valid.eq(self.as_valid),
            array.i_a.payload.last.eq(self.as_last),
        ]
        for i in range(self.cfg.rows):
            m.d.comb += array.i_a.payload.data[i].eq(Mux(i < self.as_m, self.as_column[i], 0))
        for j in range(self.cfg.cols):
            m.d.comb += array.i_b.payload.data[j].eq(
                Mux(j < self.as_n, self.unit.spad_wt.data[j], 0))

    def _results(self, m: Module) -> fifo.SyncFIFO:
        """Queue one entry per tile the array takes; write result rows `i < m` of each tile
        to `acc[acc_row + i]` (drop the others) and report the tile with row 0, its last.
        Return the FIFO."""
        unit, array = self.unit, self.array
        m.submodules.tile_fifo = tile_fifo = fifo.SyncFIFO(
            width=self.tile.size, depth=self.cfg.cols + 4)
        entry = data.View(self.tile, tile_fifo.r_data)
        write = Signal()
        row_bits = len(unit.o_acc.payload.row)
        out = array.o_c
        m.d.comb += [
            tile_fifo.w_data.eq(self.as_tile),
            tile_fifo.w_en.eq(self.as_valid & array.i_a.ready & self.as_last),
            write.eq(out.payload.row < entry.m),
            unit.o_acc.valid.eq(out.valid & write),
            unit.o_acc.payload.row.eq((entry.acc_row + out.payload.row)[:row_bits]),
            unit.o_acc.payload.accumulate.eq(entry.accumulate),
            unit.o_acc.payload.data.eq(out.payload.data),
            out.ready.eq(unit.o_acc.ready | ~write),
            tile_fifo.r_en.eq(out.valid & out.ready & out.payload.last),
            unit.o_compute_done.valid.eq(out.valid & out.ready & out.payload.last),
            unit.o_compute_done.tag.eq(entry.tag),
            unit.o_preload_done.valid.eq(0),
        ]
        return tile_fifo

    def _events(self, m: Module) -> None:
        """Drive the energy event strobes (docs/energy.md, "RTL counters"): every array beat,
        its `m·n` products, the row reads issued."""
        beat = self.array.i_a.valid & self.array.i_a.ready
        m.d.comb += [
            self.unit.o_events.beat.eq(beat),
            self.unit.o_events.macs.eq(Mux(beat, self.as_macs, 0)),
            self.unit.o_events.spad_in_read.eq(self.l_issue),
            self.unit.o_events.spad_wt_read.eq(self.s_issue),
        ]
