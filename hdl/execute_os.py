"""Output-stationary half of the EXECUTE unit: COMPUTE.OS through double-buffered A banks.

The array takes, per k, a column `A[0:rows, k]` and a row `B[k, 0:cols]`. `spad_in` holds A by
rows (k-chunks of `dim` operands), so a *loader* reads the `m` rows of one chunk, one per cycle,
into one of two banks of `rows x dim` registers while a *streamer* feeds the columns of the
other bank, one per cycle, together with B's rows read from `spad_wt` (lanes `>= n` and A rows
`>= m` as zeros). The loader starts on a bank in the cycle the streamer issues that bank's last
column, so chunks (of one instruction or of consecutive ones) follow without a gap as long as
each chunk is at least `m` columns wide (a chunk is streamed while the next one loads). Results: the array's `rows` output beats per tile; rows `i < m` go to
`acc[acc_row + i]`, the others are dropped; the tile completes with row 0 (the array's last).
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
    cfg = unit.config
    rows, dim = cfg.rows, cfg.dim
    tag = unit.i_instr.payload.tag
    instr = data.View(instruction_layout(ComputeOS), unit.i_instr.payload.payload)

    tile = data.StructLayout({"acc_row": 32, "m": 16, "accumulate": 1, "tag": unit.tag_width})
    chunk = data.StructLayout({"width": range(dim + 1), "wt": 32, "n": 16, "final": 1,
                               "tile": tile})
    bank_layout = data.ArrayLayout(data.ArrayLayout(signed(cfg.input_width), dim), rows)
    banks = [Signal(bank_layout, name=f"bank{b}") for b in range(2)]
    metas = [Signal(chunk, name=f"bank{b}_chunk") for b in range(2)]
    full = [Signal(name=f"bank{b}_full") for b in range(2)]

    s_bank = Signal()
    s_col = Signal(range(dim))
    cur = Signal(chunk)
    s_issue = Signal()
    s_advance = Signal()
    s_release = Signal()

    # -- loader: one spad_in row per cycle into bank `l_bank`
    l_busy = Signal()
    l_bank = Signal()
    l_addr = Signal(32)
    l_base = Signal(32)
    l_stride = Signal(32)
    l_i = Signal(16)
    l_k_left = Signal(32)
    l_chunk = Signal(chunk)  # width/final are filled in at the chunk's last row
    l_issue = Signal()
    l_last_row = Signal()
    l_final = Signal()
    lw_valid = Signal()
    lw_bank = Signal()
    lw_i = Signal(range(rows))
    lw_full = Signal()
    take = Signal()
    m.d.comb += [
        # a bank is free, or its last column is taken from it in this cycle (writes land later)
        l_issue.eq(l_busy & (~Mux(l_bank, full[1], full[0]) | (s_release & (s_bank == l_bank)))),
        l_last_row.eq(l_i == l_chunk.tile.m - 1),
        l_final.eq(l_k_left <= dim),
        unit.i_instr.ready.eq((instr.opcode == ComputeOS.OPCODE) &
                              (~l_busy | (l_issue & l_last_row & l_final))),
        take.eq(unit.i_instr.valid & unit.i_instr.ready),
        unit.spad_in.addr.eq(l_addr),
        unit.spad_in.en.eq(1),
    ]
    m.d.sync += [lw_valid.eq(l_issue), lw_bank.eq(l_bank), lw_i.eq(l_i),
                 lw_full.eq(l_issue & l_last_row)]
    with m.If(l_issue):
        m.d.sync += [l_addr.eq(l_addr + 1), l_i.eq(l_i + 1)]
        with m.If(l_last_row):
            for b in range(2):
                with m.If(l_bank == b):
                    m.d.sync += [metas[b].eq(l_chunk), metas[b].width.eq(Mux(l_final, l_k_left, dim)),
                                 metas[b].final.eq(l_final)]
            m.d.sync += [l_bank.eq(~l_bank), l_i.eq(0), l_base.eq(l_base + l_stride),
                         l_addr.eq(l_base + l_stride), l_k_left.eq(l_k_left - dim),
                         l_chunk.wt.eq(l_chunk.wt + dim)]
            with m.If(l_final):
                m.d.sync += l_busy.eq(0)
    with m.If(take):
        m.d.sync += [
            l_busy.eq(1), l_i.eq(0), l_addr.eq(instr.in_row), l_base.eq(instr.in_row),
            l_stride.eq(instr.a_stride), l_k_left.eq(instr.k),
            l_chunk.wt.eq(instr.wt_row), l_chunk.n.eq(instr.n),
            l_chunk.tile.acc_row.eq(instr.acc_row), l_chunk.tile.m.eq(instr.m),
            l_chunk.tile.accumulate.eq(instr.accumulate), l_chunk.tile.tag.eq(tag),
        ]
    for b in range(2):
        with m.If(lw_valid & (lw_bank == b)):
            m.d.sync += banks[b][lw_i].eq(unit.spad_in.data)
            with m.If(lw_full):
                m.d.sync += full[b].eq(1)

    # -- streamer: one column of bank `s_bank` and one spad_wt row per cycle
    as_valid = Signal()
    as_last = Signal()
    as_tile = Signal(tile)
    as_n = Signal(16)
    as_m = Signal(16)
    as_macs = Signal(range(cfg.pes + 1))
    as_column = Signal(data.ArrayLayout(signed(cfg.input_width), rows))
    column = Signal.like(as_column)
    m.d.comb += [
        cur.eq(Mux(s_bank, metas[1], metas[0])),
        s_advance.eq(~as_valid | array.i_a.ready),
        s_issue.eq(s_advance & Mux(s_bank, full[1], full[0])),
        unit.spad_wt.addr.eq(cur.wt + s_col),
        unit.spad_wt.en.eq(s_advance),
    ]
    for i in range(rows):
        m.d.comb += column[i].eq(Mux(s_bank, banks[1][i][s_col], banks[0][i][s_col]))
    with m.If(s_advance):
        m.d.sync += as_valid.eq(s_issue)
    last_col = s_col == cur.width - 1
    m.d.comb += s_release.eq(s_issue & last_col)
    with m.If(s_issue):
        m.d.sync += [as_column.eq(column), as_last.eq(last_col & cur.final),
                     as_tile.eq(cur.tile), as_n.eq(cur.n), as_m.eq(cur.tile.m),
                     as_macs.eq(cur.tile.m[:rows.bit_length()] * cur.n[:cfg.cols.bit_length()])]
        with m.If(last_col):
            m.d.sync += [s_col.eq(0), s_bank.eq(~s_bank)]
            for b in range(2):
                with m.If(s_bank == b):
                    m.d.sync += full[b].eq(0)
        with m.Else():
            m.d.sync += s_col.eq(s_col + 1)
    m.d.comb += [
        array.i_a.valid.eq(as_valid), array.i_b.valid.eq(as_valid),
        array.i_a.payload.last.eq(as_last),
    ]
    for i in range(rows):
        m.d.comb += array.i_a.payload.data[i].eq(Mux(i < as_m, as_column[i], 0))
    for j in range(cfg.cols):
        m.d.comb += array.i_b.payload.data[j].eq(Mux(j < as_n, unit.spad_wt.data[j], 0))

    # -- results: one tile entry per finished tile, in order
    m.submodules.tile_fifo = tile_fifo = fifo.SyncFIFO(width=tile.size, depth=cfg.cols + 4)
    entry = data.View(tile, tile_fifo.r_data)
    write = Signal()
    row_bits = len(unit.o_acc.payload.row)
    out = array.o_c
    m.d.comb += [
        tile_fifo.w_data.eq(as_tile),
        tile_fifo.w_en.eq(as_valid & array.i_a.ready & as_last),
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
    beat = array.i_a.valid & array.i_a.ready  # energy events (docs/energy.md, "RTL counters")
    m.d.comb += [
        unit.o_events.beat.eq(beat),
        unit.o_events.macs.eq(Mux(beat, as_macs, 0)),
        unit.o_events.spad_in_read.eq(l_issue),
        unit.o_events.spad_wt_read.eq(s_issue),
    ]
    idle = Signal(name="os_idle")
    m.d.comb += idle.eq(~(l_busy | lw_valid | full[0] | full[1] | as_valid | tile_fifo.r_rdy))
    return idle
