"""`StoreUnit`: executes STORE, COPY, POOL, ADD, TABLE, SOFTMAX and LAYERNORM, writing rows to
external memory."""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig, OptionalUnit
from systolic.hdl.absent_unit import absent_ports
from systolic.hdl.accumulator import read_signature
from systolic.hdl.instruction_fields import completion_signature, instruction_signature
from systolic.hdl.lookup_table import LookupTable, load_bytes, load_rows
from systolic.hdl.output_stage import OutputStage
from systolic.hdl.pool_window import emit_window_walk
from systolic.hdl.ports import memory_read_signature, params_row_layout, write_beat_layout
from systolic.hdl.row_writer import RowWriter
from systolic.hdl.shared_multipliers import share_multipliers
from systolic.hdl.softmax_unit import SoftmaxUnit
from systolic.hdl.store_datapath import output_rows, table_loads, vector_path
from systolic.hdl.store_state import Control, Reads, StoreInstruction, field, pick
from systolic.hdl.vector_unit import PRODUCT, VectorUnit
from systolic.isa.instructions import Add, Copy, LayerNorm, Pool, Softmax, Store, Table
from systolic.isa.memories import PARAMS_DEPTH, Memory, depth

__all__ = ["MIN_FIFO_DEPTH", "StoreUnit", "store_events_layout"]

MIN_FIFO_DEPTH = 12
"""The fewest FIFO entries (`StoreUnit`'s `fifo_depth`): the row-normalisation unit's chunk
credit loop is 11 cycles long, and 12 keeps it one chunk per cycle with a margin."""

SHARED_MULTIPLIERS = {"product": "lane"}
"""The vector unit's multiplication computed by the row-normalisation unit's multipliers
(`shared_multipliers`): PRODUCT's factor times t in the lane product (9 x 41 in 17 x 52). The
row unit's p times M (27 x 32) is computed by the output stage's partial products
(`_lend_requant`) when every row-unit lane has an output-stage lane (dim == cols)."""

WRITERS = (Store, Copy, Pool, Add, Softmax, LayerNorm)
"""The classes that write rows (all but TABLE): they share the row pattern's fields."""


def store_events_layout(config: ArrayConfig) -> data.StructLayout:
    """Return the layout of the STORE unit's lane events in one cycle (docs/energy.md, "RTL
    counters"): {output_stage_lanes: up to cols; vector_lanes, vector_mul_lanes, lut_lookups,
    lut_writes: up to dim}."""
    dim = range(config.dim + 1)
    return data.StructLayout({"output_stage_lanes": range(config.cols + 1), "vector_lanes": dim,
                              "vector_mul_lanes": dim, "lut_lookups": dim, "lut_writes": dim})


class StoreUnit(wiring.Component):
    """The ST unit: STORE, COPY, POOL, ADD, TABLE, SOFTMAX and LAYERNORM, one at a time.

    Three families share one reader, one FIFO and one writer:

    - STORE and COPY (the output path, `store_datapath.output_rows`): STORE reads `acc` rows
      (and one `params` row) through the `OutputStage`, COPY passes `spad_in` rows through;
      with `lut` every output element is mapped through the activation table (a
      `LookupTable` of int8, one registered stage before the FIFO, before `flip_sign`);
      STORE `raw` writes `wrap32(acc + bias)` as 4-byte lanes instead of the stage's row.
    - POOL and ADD (`store_datapath.vector_path`): `spad_in` rows or window positions through
      the `VectorUnit`; ADD `mul` runs it in PRODUCT mode, ADD `b_broadcast` reads row
      `b_row` for every output row.
    - TABLE, SOFTMAX and LAYERNORM (`store_datapath.table_loads`): TABLE loads its
      ceil(256 / dim) `spad_in` rows into the activation table (with `wide` its
      ceil(512 / dim) rows into the exp table of the `SoftmaxUnit`) and writes nothing;
      SOFTMAX and LAYERNORM run in the `SoftmaxUnit` (the row-normalisation unit), which
      takes over the spad_in port and sends each row's chunks with their own addresses
      (`RowWriter`'s direct mode).

    Here: the control (`_control`), the reader (`_reader`: one read per cycle within the FIFO
    credit) and the writer (`_write`: row i as `n` (STORE, 4·n bytes with `raw`) or `lanes`
    elements of `operand_bytes` bytes at the row pattern's `row_base(i)`, in aligned beats
    with byte strobes, `RowWriter`). Results are bit-exact with
    `systolic.sim.golden.machine`; durations are `systolic.sim.timing.store_timing.duration`.

    Units the configuration leaves out (`config.without`, docs/hardware.md "Optional units")
    are not built: without `OptionalUnit.TABLES` no activation table, without
    `OptionalUnit.ROW_UNIT` no `SoftmaxUnit` (and no shared multipliers: the vector unit and
    the output stage keep their own); their `absent_ports` read 0, and the program check
    refuses the instructions that would need them.

    Parameters
    ----------
    config : ArrayConfig
    fifo_depth : int
        Output rows buffered between the datapath and the writer (at least `MIN_FIFO_DEPTH`,
        12, so that the writer never waits for the pipeline once it has started: a SOFTMAX or
        LAYERNORM chunk's credit comes back 11 cycles after its read, 9 in the lanes and 2
        through the FIFO, and their one-beat chunks leave one per cycle).

    Members
    -------
    i_instr : ``In(instruction_fields.instruction_signature())``
        Instructions {payload: 512-bit word, tag} in program order; `ready` only while idle
        (an instruction is taken in the cycle after the previous one completed, or later).
    o_complete : ``Out(instruction_fields.completion_signature())``
        Strobe {tag} of the instruction that completed: every byte it writes has been
        transferred on `o_write`. Always ready.
    acc_read : ``Out(accumulator.read_signature(acc_depth, cols, acc_width))``
        Accumulator rows (STORE); `resp.ready` is always 1.
    spad_read : ``Out(memory_read_signature(depth(spad_in), ArrayLayout(signed(input_width),
    dim)))``
        spad_in read port 1 (COPY, POOL, ADD); data in the cycle after `en`.
    params_read : ``Out(memory_read_signature(512, params_row_layout(cols)))``
        Params rows (STORE); data in the cycle after `en`.
    o_write : ``Out(stream.Signature(write_beat_layout(bus_bytes)))``
        External memory write channel: aligned beats {addr, data, strobe}.
    busy : ``Out(1)``
        An instruction has been taken and has not completed.
    o_events : ``Out(store_events_layout(config))``
        This cycle's lane events (`_events`): lanes entering the output stage (not for STORE
        raw), the vector unit (and SOFTMAX's and LAYERNORM's reads, `dim` each), PRODUCT rows
        (ADD `mul`, `dim` per output row; LAYERNORM's reads, whose lanes multiply, `dim`
        each), table lookups (both tables, `dim` per lookup) and table bytes loaded.

    Latency, throughput and backpressure
    ------------------------------------
    Reads are issued one element per cycle (STORE, COPY, TABLE: one row per cycle; ADD: two
    cycles per row; POOL: one window element per cycle, windows back to back) while fewer than
    `fifo_depth` finished rows wait for the writer; the writer sends one beat per cycle, rows
    back to back. Datapath latency from a row's last read: COPY 1, STORE 7, POOL/ADD 8 cycles,
    one more for STORE and COPY with `lut`, two more for ADD with `mul`. TABLE reads its rows from
    cycle s + 1 (taken in s), registers the last into the table in s + R + 1 and completes in
    s + R + 2.
    `o_write` may stall: the unit then holds its reads and nothing is lost (the duration
    formula assumes an always-ready write channel).
    """

    def __init__(self, config: ArrayConfig, *, fifo_depth: int = 16):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        if not isinstance(fifo_depth, int) or fifo_depth < MIN_FIFO_DEPTH:
            raise ValueError(f"fifo_depth must be an integer of at least {MIN_FIFO_DEPTH}, "
                             f"not {fifo_depth!r}")
        if config.operand_bytes > 2:
            raise ValueError(f"operand_bytes must be 1 or 2, not {config.operand_bytes}")
        self._config, self._fifo_depth = config, fifo_depth
        super().__init__({
            "i_instr": In(instruction_signature()),
            "o_complete": Out(completion_signature()),
            "acc_read": Out(read_signature(config.acc_depth, config.cols, config.acc_width)),
            "spad_read": Out(memory_read_signature(
                depth(config, Memory.SPAD_IN),
                data.ArrayLayout(signed(config.input_width), config.dim))),
            "params_read": Out(memory_read_signature(PARAMS_DEPTH, params_row_layout(config.cols))),
            "o_write": Out(stream.Signature(write_beat_layout(config.bus_bytes))),
            "busy": Out(1),
            "o_events": Out(store_events_layout(config)),
        })

    @property
    def config(self) -> ArrayConfig:
        return self._config

    @property
    def _row_bytes(self) -> int:
        """Bytes of the widest row: `dim` operands, or STORE raw's `cols` int32 lanes."""
        return max(self._config.dim * self._config.operand_bytes, 4 * self._config.cols)

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        width = self._row_bytes
        row_unit = cfg.has(OptionalUnit.ROW_UNIT)
        # the output stage has a lane for every row-unit lane
        lend = row_unit and cfg.dim == cfg.cols
        m.submodules.stage = stage = OutputStage(cols=cfg.cols, acc_width=cfg.acc_width,
                                                 lend_multipliers=lend)
        m.submodules.vector = vector = VectorUnit(
            lanes=cfg.dim, input_width=cfg.input_width,
            external_products=tuple(SHARED_MULTIPLIERS) if row_unit else ())
        table, softmax = self._optional_units(m, lend)
        m.submodules.fifo = fifo = SyncFIFO(width=_entry_layout(cfg.dim, width).size,
                                            depth=self._fifo_depth)
        m.submodules.writer = writer = RowWriter(elements=width, element_bytes=1,
                                                 bus_bytes=cfg.bus_bytes)
        instr = StoreInstruction(m)
        if row_unit:  # POOL/ADD and SOFTMAX/LAYERNORM are never in flight together: one set
            share_multipliers(m, vector, softmax, SHARED_MULTIPLIERS, instr.row_norm, cfg.dim)
        if lend:
            _lend_requant(m, stage, softmax, instr.row_norm, cfg.dim)
        control = self._control(m, instr)
        space = Signal()  # FIFO credit: fewer than fifo_depth rows in the datapath and FIFO
        reads = self._reader(m, instr, control, space, softmax)
        vector_path(m, self, instr, reads, vector)
        row = output_rows(m, self, instr, control, reads, stage, vector, table)
        table_done = table_loads(m, self, instr, control, reads, table, softmax)
        rows_done = self._write(m, instr, control, reads, row, fifo, writer, softmax, space)
        m.d.comb += control.finish.eq(rows_done | table_done | softmax.done)
        self._events(m, instr, stage, vector, table, softmax)
        return m

    def _optional_units(self, m, lend):
        """Add the activation table and the row-normalisation unit (`SoftmaxUnit`) unless the
        configuration leaves them out (`ArrayConfig.without`: then their `absent_ports`, whose
        outputs stay 0); return (table, softmax)."""
        cfg = self._config
        table = LookupTable(lanes=cfg.dim, entry=signed(8))
        if cfg.has(OptionalUnit.TABLES):
            m.submodules.table = table
        else:
            table = absent_ports(table, "table")
        if not cfg.has(OptionalUnit.ROW_UNIT):
            return table, absent_ports(SoftmaxUnit(lanes=cfg.dim, bus_bytes=cfg.bus_bytes),
                                       "softmax")
        m.submodules.softmax = softmax = SoftmaxUnit(
            lanes=cfg.dim, bus_bytes=cfg.bus_bytes,
            external_products=tuple(SHARED_MULTIPLIERS.values()), external_requant=lend)
        return table, softmax

    def _events(self, m, instr, stage, vector, table, softmax):
        """Count this cycle's lane events at the datapaths' ports (docs/energy.md, "RTL
        counters")."""
        cfg, events = self._config, self.o_events
        raw = instr.is_[Store] & instr.field(Store, "raw")
        element = vector.i_elem.valid & vector.i_elem.ready
        wide = softmax.i_load.valid
        load_row = Mux(wide, softmax.i_load.payload.row, table.i_load.payload.row)
        m.d.comb += [
            events.output_stage_lanes.eq(
                Mux(stage.i_acc.valid & stage.i_acc.ready & ~raw, cfg.cols, 0)),
            events.vector_lanes.eq(Mux(element | softmax.spad_en, cfg.dim, 0)),
            events.vector_mul_lanes.eq(Mux(
                (element & vector.i_elem.payload.last & (vector.mode == PRODUCT))
                | (softmax.spad_en & instr.is_[LayerNorm]), cfg.dim, 0)),
            events.lut_lookups.eq(Mux(table.i_index.valid | softmax.lookup, cfg.dim, 0)),
            events.lut_writes.eq(Mux(table.i_load.valid | wide, Mux(
                wide, load_bytes(load_row, cfg.dim, 2), load_bytes(load_row, cfg.dim, 1)), 0)),
        ]

    def _control(self, m, instr):
        """Take an instruction while idle and report it `done` (one cycle) when it finishes."""
        running, first_cycle = Signal(name="running"), Signal(name="first_cycle")
        done, finish = Signal(name="done"), Signal(name="finish")
        accept = self.i_instr.valid & self.i_instr.ready
        m.d.comb += [
            self.i_instr.ready.eq(~running & ~done),
            self.o_complete.valid.eq(done),
            self.o_complete.payload.tag.eq(instr.tag),
            self.busy.eq(running | done),
        ]
        m.d.sync += [first_cycle.eq(accept), done.eq(0)]
        with m.If(accept):
            m.d.sync += [instr.word.eq(self.i_instr.payload.payload),
                         instr.tag.eq(self.i_instr.payload.tag), running.eq(1)]
        with m.If(finish):
            m.d.sync += [running.eq(0), done.eq(1)]
        return Control(accept, first_cycle, running, finish)

    def _reader(self, m, instr, control, space, softmax):
        """Issue one read per cycle while there is `space` (all but SOFTMAX and LAYERNORM, whose
        unit drives the spad_in port itself): acc rows (STORE), spad_in rows (COPY, TABLE; ADD's
        a and b), POOL's window positions; the read's flags follow it by one cycle."""
        dim, is_ = self._config.dim, instr.is_
        incoming = self.i_instr.payload.payload
        pool = {name: instr.field(Pool, name) for name in (
            "h", "w", "kh", "kw", "sh", "sw", "pad_left", "oh", "ow", "in_row")}
        wide = instr.field(Table, "wide")
        total = pick([(is_[Pool], pool["oh"] * pool["ow"]),
                      (is_[Table], Mux(wide, load_rows(dim, 2), load_rows(dim, 1)))],
                     instr.common("m", (Store, Copy, Add)))
        row_index, issued_all = Signal(32, name="row_index"), Signal(name="issued_all")
        phase = Signal()  # ADD: 0 reads a, 1 reads b
        issue, last = Signal(name="issue"), Signal(name="last")
        walk = emit_window_walk(m, pool, control.accept, field(incoming, Pool, "pad_top"),
                                field(incoming, Pool, "pad_left"), issue & is_[Pool])
        m.d.comb += [
            issue.eq(control.running & ~instr.row_norm & ~issued_all & space),
            last.eq(pick([(is_[Add], phase), (is_[Pool], walk.last)], 1)),
        ]
        broadcast = instr.field(Add, "b_broadcast")
        spad_addr = pick([
            (is_[Copy], instr.field(Copy, "in_row") + row_index),
            (is_[Table], instr.field(Table, "row") + row_index),
            (is_[Add] & phase, instr.field(Add, "b_row") + Mux(broadcast, 0, row_index)),
            (is_[Add], instr.field(Add, "a_row") + row_index),
        ], pool["in_row"] + walk.y * pool["w"] + walk.x)
        m.d.comb += [
            self.acc_read.req.valid.eq(issue & is_[Store]),
            self.acc_read.req.payload.row.eq(instr.field(Store, "acc_row") + row_index),
            self.acc_read.resp.ready.eq(1),
            self.spad_read.en.eq((issue & ~is_[Store]) | softmax.spad_en),
            self.spad_read.addr.eq(Mux(instr.row_norm, softmax.spad_addr, spad_addr)),
        ]
        with m.If(control.accept):
            m.d.sync += [row_index.eq(0), issued_all.eq(0), phase.eq(0)]
        with m.If(issue):
            m.d.sync += phase.eq(~phase)
            with m.If(last):
                m.d.sync += row_index.eq(row_index + 1)
                with m.If(row_index + 1 == total):
                    m.d.sync += issued_all.eq(1)

        valid = Signal()
        flags = Signal(data.StructLayout({  # row: TABLE's row number (for the table)
            "sel": 1, "first": 1, "last": 1, "row": range(load_rows(dim, 2))}))
        m.d.sync += [
            valid.eq(issue & ~is_[Store]),
            flags.sel.eq(is_[Add] & phase),
            flags.first.eq(Mux(is_[Add], ~phase, walk.first)),
            flags.last.eq(last),
            flags.row.eq(row_index),
        ]
        return Reads(issue, last, valid, flags, total)

    def _write(self, m, instr, control, reads, row, fifo, writer, softmax, space):
        """Send `row` (bits, valid) or SOFTMAX's and LAYERNORM's chunks (at their own addresses)
        through the FIFO to the writer, which walks the row pattern; keep the FIFO credit;
        return the finish of a row-writing instruction (its last row written)."""
        cfg, is_ = self._config, instr.is_
        chunk, (row_bits, row_valid) = softmax.o_chunk, row
        layout = _entry_layout(cfg.dim, self._row_bytes)
        entry_in, entry_out = Signal(layout, name="entry_in"), Signal(layout, name="entry_out")
        m.d.comb += [
            entry_in.data.eq(Mux(instr.row_norm, chunk.payload.data.as_value(), row_bits)),
            entry_in.direct.eq(instr.row_norm),
            entry_in.addr.eq(chunk.payload.addr),
            entry_in.bytes.eq(chunk.payload.bytes),
            fifo.w_en.eq(Mux(instr.row_norm, chunk.valid, row_valid)),
            fifo.w_data.eq(entry_in),
            entry_out.eq(fifo.r_data),
            writer.i_row.valid.eq(fifo.r_rdy),
            writer.i_row.payload.eq(entry_out.data),
            writer.direct.eq(entry_out.direct),
            writer.direct_addr.eq(entry_out.addr),
            writer.direct_bytes.eq(entry_out.bytes * cfg.operand_bytes),
            fifo.r_en.eq(writer.i_row.ready),
        ]
        pending = Signal(range(self._fifo_depth + 1))
        ends_row = reads.issue & reads.last & ~is_[Table]
        m.d.sync += pending.eq(pending + (ends_row | softmax.reserve) - (fifo.r_rdy & fifo.r_en))
        m.d.comb += [
            space.eq(pending < self._fifo_depth),
            softmax.space.eq(space),
            softmax.written.eq(writer.row_done & instr.row_norm),
        ]
        self._pattern(m, instr, control, writer)

        written, done = Signal(32, name="written"), Signal(name="done")
        with m.If(control.accept):
            m.d.sync += written.eq(0)
        with m.Elif(writer.row_done & ~instr.row_norm):
            m.d.sync += written.eq(written + 1)
            m.d.comb += done.eq(written + 1 == reads.total)
        return done

    def _pattern(self, m, instr, control, writer):
        """Start the writer on the row pattern and the row size of the instruction."""
        ob, n = self._config.operand_bytes, instr.field(Store, "n")
        m.d.comb += [
            writer.start.eq(control.first_cycle),
            writer.ext.eq(instr.common("ext", WRITERS)),
            writer.n0.eq(instr.common("n0", WRITERS)),
            writer.stride0.eq(instr.common("row_stride0", WRITERS)),
            writer.stride1.eq(instr.common("row_stride1", WRITERS)),
            writer.row_bytes.eq(pick([(instr.is_[Store] & instr.field(Store, "raw"), n * 4),
                                      (instr.is_[Store], n * ob)],
                                     instr.common("lanes", (Copy, Pool, Add)) * ob)),
            writer.flip.eq(instr.common("flip_sign", WRITERS)),
        ]
        wiring.connect(m, wiring.flipped(self.o_write), writer.o_write)


def _lend_requant(m, stage, softmax, row_norm, lanes):
    """SOFTMAX and LAYERNORM (never beside a STORE): the row unit's p * multiplier in the
    output stage's DSP blocks (registered pieces, summed in the row unit's next cycle)."""
    m.d.comb += [stage.lend.eq(row_norm),
                 stage.lend_multiplier.eq(softmax.o_requant.multiplier)]
    for j in range(lanes):
        m.d.comb += [stage.lend_x[j].eq(softmax.o_requant.p[j]),
                     softmax.i_requant[j].eq(stage.o_lent[j])]


def _entry_layout(dim, width):
    """Return one FIFO entry: a row of `width` bytes or, `direct`, a SOFTMAX or LAYERNORM chunk
    with its byte address and byte count."""
    return data.StructLayout({"data": 8 * width, "direct": 1, "addr": 32,
                              "bytes": range(dim + 1)})
