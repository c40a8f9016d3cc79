"""`StoreUnit`: executes STORE, COPY, POOL, ADD, TABLE and SOFTMAX, writing rows to external
memory."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig
from systolic.hdl.accumulator import read_signature
from systolic.hdl.instruction_fields import (
    TAG_WIDTH,
    completion_signature,
    instruction_layout,
    instruction_signature,
)
from systolic.hdl.lookup_table import LookupTable, load_rows
from systolic.hdl.output_stage import LATENCY as OUTPUT_LATENCY
from systolic.hdl.output_stage import OutputStage
from systolic.hdl.pool_window import emit_window_walk
from systolic.hdl.ports import memory_read_signature, params_row_layout, write_beat_layout
from systolic.hdl.row_writer import RowWriter
from systolic.hdl.softmax_unit import SoftmaxUnit, fields_layout
from systolic.hdl.vector_unit import PRODUCT, SCALED_SUM, VectorUnit
from systolic.isa.fields import INSTRUCTION_BITS
from systolic.isa.instructions import Add, Copy, Pool, Softmax, Store, Table
from systolic.isa.memories import PARAMS_DEPTH, Memory, depth

__all__ = ["StoreUnit"]


def field(word, cls, name):
    """Return field `name` of instruction class `cls` in `word`, from the ISA's field table."""
    return data.View(instruction_layout(cls), word)[name]


def _pick(options, default):
    """Return a Mux chain: the value of the first (condition, value) pair whose condition holds."""
    result = default
    for condition, value in reversed(options):
        result = Mux(condition, value, result)
    return result


class StoreUnit(wiring.Component):
    """The ST unit: STORE (output stage), COPY, POOL and ADD (vector unit), TABLE, one at a time.

    Every instruction but TABLE reads its source rows (STORE: `acc` rows and one `params` row;
    COPY, POOL, ADD: `spad_in` rows through read port 1), turns them into output rows and
    writes row i as `n` (STORE) or `lanes` elements of `operand_bytes` bytes at the row
    pattern's `row_base(i)`, in aligned beats with byte strobes (`RowWriter`). STORE and COPY
    with `lut` map every output element through the activation table (`ActivationTable`, one
    registered stage before the FIFO, before `flip_sign`); ADD with `mul` runs the vector unit
    in PRODUCT mode; ADD with `b_broadcast` reads row `b_row` for every output row. TABLE
    reads its ceil(256 / dim) `spad_in` rows into the activation table (with `wide` its
    ceil(512 / dim) rows into the exp table) and writes nothing. STORE with `raw` writes
    `wrap32(acc + bias)` as 4-byte lanes instead of the output stage's row. SOFTMAX runs in
    `SoftmaxUnit`, which takes over the spad_in port and sends each row's chunks with their
    own addresses (`RowWriter`'s direct mode).
    Results are bit-exact with `systolic.sim.golden.machine`; durations are
    `systolic.sim.timing.store_timing.duration`.

    Parameters
    ----------
    config : ArrayConfig
    fifo_depth : int
        Output rows buffered between the datapath and the writer (at least 8, so the writer
        never waits for the pipeline once it has started).

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

    Latency, throughput and backpressure
    ------------------------------------
    Reads are issued one element per cycle (STORE, COPY, TABLE: one row per cycle; ADD: two
    cycles per row; POOL: one window element per cycle, windows back to back) while fewer than
    `fifo_depth` finished rows wait for the writer; the writer sends one beat per cycle, rows
    back to back. Datapath latency from a row's last read: COPY 1, STORE 5, POOL/ADD 6 cycles,
    one more for STORE and COPY with `lut` and for ADD with `mul`. TABLE reads its rows from
    cycle s + 1 (taken in s), registers the last into the table in s + R + 1 and completes in
    s + R + 2.
    `o_write` may stall: the unit then holds its reads and nothing is lost (the duration
    formula assumes an always-ready write channel).
    """

    def __init__(self, config: ArrayConfig, *, fifo_depth: int = 8):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        if not isinstance(fifo_depth, int) or fifo_depth < 8:
            raise ValueError(f"fifo_depth must be an integer of at least 8, not {fifo_depth!r}")
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
        })

    @property
    def config(self) -> ArrayConfig:
        return self._config

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        dim, cols, ob = cfg.dim, cfg.cols, cfg.operand_bytes
        element = signed(8 * ob)
        row_layout = data.ArrayLayout(element, dim)
        width = max(dim * ob, 4 * cols)  # bytes of the widest row: STORE raw's int32 lanes
        entry_layout = data.StructLayout({  # one FIFO entry; direct: a SOFTMAX chunk
            "data": 8 * width, "direct": 1, "addr": 32, "bytes": range(dim + 1)})

        m.submodules.stage = stage = OutputStage(cols=cols, acc_width=cfg.acc_width)
        m.submodules.vector = vector = VectorUnit(lanes=dim, input_width=cfg.input_width)
        m.submodules.writer = writer = RowWriter(elements=width, element_bytes=1,
                                                 bus_bytes=cfg.bus_bytes)
        m.submodules.fifo = fifo = SyncFIFO(width=entry_layout.size, depth=self._fifo_depth)
        m.submodules.table = table = LookupTable(lanes=dim, entry=signed(8))
        m.submodules.softmax = softmax = SoftmaxUnit(lanes=dim, bus_bytes=cfg.bus_bytes)

        word = Signal(INSTRUCTION_BITS)
        tag = Signal(TAG_WIDTH)
        opcode = word[:8]
        kind = {cls: Signal(name=f"is_{cls.MNEMONIC.lower()}")
                for cls in (Store, Copy, Pool, Add, Table, Softmax)}
        m.d.comb += [flag.eq(opcode == cls.OPCODE) for cls, flag in kind.items()]
        is_store, is_copy, is_pool, is_add, is_table, is_softmax = (
            kind[c] for c in (Store, Copy, Pool, Add, Table, Softmax))
        classes = (Store, Copy, Pool, Add, Softmax)

        def common(name, among=classes):
            """Return field `name` of whichever of the classes `among` the instruction is."""
            return _pick([(kind[c], field(word, c, name)) for c in among[:-1]],
                         field(word, among[-1], name))

        # -- control ---------------------------------------------------------------------------
        running = Signal()
        first_cycle = Signal()
        done = Signal()
        accept = self.i_instr.valid & self.i_instr.ready
        m.d.comb += [
            self.i_instr.ready.eq(~running & ~done),
            self.o_complete.valid.eq(done),
            self.o_complete.payload.tag.eq(tag),
            self.busy.eq(running | done),
        ]
        m.d.sync += first_cycle.eq(accept)
        with m.If(accept):
            m.d.sync += [word.eq(self.i_instr.payload.payload), tag.eq(self.i_instr.payload.tag),
                         running.eq(1)]
        with m.If(done):
            m.d.sync += done.eq(0)

        # STORE's params row: read while idle, captured in the first cycle of the instruction.
        params = Signal(params_row_layout(cols))
        incoming = self.i_instr.payload.payload
        m.d.comb += [
            self.params_read.addr.eq(field(incoming, Store, "param_row")),
            self.params_read.en.eq(accept),
        ]
        with m.If(first_cycle):
            m.d.sync += params.eq(self.params_read.data)

        # -- issue: one element read per cycle -------------------------------------------------
        pool = {name: field(word, Pool, name) for name in (
            "h", "w", "kh", "kw", "sh", "sw", "pad_left", "oh", "ow", "in_row")}
        wide = field(word, Table, "wide")
        total = _pick([(is_pool, pool["oh"] * pool["ow"]),
                       (is_table, Mux(wide, load_rows(dim, 2), load_rows(dim, 1)))],
                      common("m", (Store, Copy, Add)))
        row_index = Signal(32)
        issued_all = Signal()
        pending = Signal(range(self._fifo_depth + 1))
        phase = Signal()  # ADD: 0 reads a, 1 reads b
        issue = Signal()
        walk = emit_window_walk(m, pool, accept,
                                field(incoming, Pool, "pad_top"),
                                field(incoming, Pool, "pad_left"), issue & is_pool)
        issue_last = Signal()
        m.d.comb += [
            issue.eq(running & ~is_softmax & ~issued_all & (pending < self._fifo_depth)),
            issue_last.eq(_pick([(is_add, phase), (is_pool, walk.last)], 1)),
        ]
        broadcast = field(word, Add, "b_broadcast")
        spad_addr = _pick([
            (is_copy, field(word, Copy, "in_row") + row_index),
            (is_table, field(word, Table, "row") + row_index),
            (is_add & phase, field(word, Add, "b_row") + Mux(broadcast, 0, row_index)),
            (is_add, field(word, Add, "a_row") + row_index),
        ], pool["in_row"] + walk.y * pool["w"] + walk.x)
        m.d.comb += [
            self.acc_read.req.valid.eq(issue & is_store),
            self.acc_read.req.payload.row.eq(field(word, Store, "acc_row") + row_index),
            self.acc_read.resp.ready.eq(1),
            self.spad_read.en.eq((issue & ~is_store) | softmax.spad_en),
            self.spad_read.addr.eq(Mux(is_softmax, softmax.spad_addr, spad_addr)),
        ]

        with m.If(accept):
            m.d.sync += [row_index.eq(0), issued_all.eq(0), phase.eq(0)]
        with m.If(issue):
            m.d.sync += phase.eq(~phase)
            with m.If(issue_last):
                m.d.sync += row_index.eq(row_index + 1)
                with m.If(row_index + 1 == total):
                    m.d.sync += issued_all.eq(1)

        # -- datapath ----------------------------------------------------------------------------
        read_valid = Signal()
        read_flags = Signal(data.StructLayout({  # row: TABLE's row number (for the table)
            "sel": 1, "first": 1, "last": 1, "row": range(load_rows(dim, 2))}))
        m.d.sync += [
            read_valid.eq(issue & ~is_store),
            read_flags.sel.eq(is_add & phase),
            read_flags.first.eq(Mux(is_add, ~phase, walk.first)),
            read_flags.last.eq(issue_last),
            read_flags.row.eq(row_index),
        ]
        m.d.comb += [
            stage.i_acc.valid.eq(self.acc_read.resp.valid),
            stage.i_acc.payload.data.eq(self.acc_read.resp.payload.data),
            stage.bias.eq(params.bias),
            stage.multiplier.eq(params.multiplier),
            stage.zero_point.eq(field(word, Store, "zero_point")),
            stage.lo.eq(field(word, Store, "lo")),
            stage.hi.eq(field(word, Store, "hi")),
            stage.o_q.ready.eq(1),
        ]
        m.d.comb += [stage.shift[i].eq(params.shift[i][:6].as_signed())
                     for i in range(cols)]

        m.d.comb += [
            vector.i_elem.valid.eq(read_valid & (is_pool | is_add)),
            vector.i_elem.payload.data.eq(self.spad_read.data),
            vector.i_elem.payload.sel.eq(read_flags.sel),
            vector.i_elem.payload.first.eq(read_flags.first),
            vector.i_elem.payload.last.eq(read_flags.last),
            vector.o_row.ready.eq(1),
            vector.mode.eq(Mux(is_add, Mux(field(word, Add, "mul"), PRODUCT, SCALED_SUM),
                               field(word, Pool, "mode"))),
            vector.multiplier[0].eq(Mux(is_add, field(word, Add, "multiplier_a"),
                                        field(word, Pool, "multiplier"))),
            vector.multiplier[1].eq(field(word, Add, "multiplier_b")),
            vector.zero_in[0].eq(Mux(is_add, field(word, Add, "zp_a"), field(word, Pool, "zp_in"))),
            vector.zero_in[1].eq(field(word, Add, "zp_b")),
            vector.shift.eq(Mux(is_add, field(word, Add, "shift"), field(word, Pool, "shift"))),
            vector.zero_out.eq(Mux(is_add, field(word, Add, "zp_out"), field(word, Pool, "zp_out"))),
            vector.lo.eq(Mux(is_add, field(word, Add, "lo"), field(word, Pool, "lo"))),
            vector.hi.eq(Mux(is_add, field(word, Add, "hi"), field(word, Pool, "hi"))),
        ]

        # Rows before the table (`row`), then after it when `lut` (`mapped`, one cycle later).
        row = Signal(row_layout)
        row_valid = Signal()
        for i in range(dim):
            stored = stage.o_q.payload.data[i] if i < cols else 0
            m.d.comb += row[i].eq(_pick([
                (is_store, stored), (is_copy, self.spad_read.data[i])], vector.o_row.payload[i]))
        m.d.comb += row_valid.eq(stage.o_q.valid | vector.o_row.valid | (read_valid & is_copy))
        lut = Signal()
        mapped = Signal(row_layout)
        m.d.comb += [
            lut.eq((is_store | is_copy) & common("lut", (Store, Copy))),
            table.i_index.valid.eq(row_valid & lut),
            table.i_load.valid.eq(read_valid & is_table & ~wide),
            softmax.i_load.valid.eq(read_valid & is_table & wide),
            softmax.i_load.payload.row.eq(read_flags.row),
            table.i_load.payload.row.eq(read_flags.row),
        ]
        for i in range(dim):
            m.d.comb += [
                table.i_index.payload[i].eq(Cat(row[i][:7], ~row[i][7])),  # y + 128
                table.i_load.payload.data[i].eq(self.spad_read.data[i]),
                softmax.i_load.payload.data[i].eq(self.spad_read.data[i]),
                softmax.spad_data[i].eq(self.spad_read.data[i]),
                mapped[i].eq(table.o_entry.payload[i]),
            ]
        raw = field(word, Store, "raw")
        raw_row = _raw_row(m, self.acc_read.resp, params.bias, cols)
        chunk = softmax.o_chunk.payload
        entry_in = Signal(entry_layout)
        entry_out = Signal(entry_layout)
        m.d.comb += [
            entry_in.data.eq(_pick([(is_store & raw, raw_row),
                                    (is_softmax, chunk.data.as_value()),
                                    (lut, mapped.as_value())], row.as_value())),
            entry_in.direct.eq(is_softmax),
            entry_in.addr.eq(chunk.addr),
            entry_in.bytes.eq(chunk.bytes),
            fifo.w_en.eq(_pick([(is_softmax, softmax.o_chunk.valid), (lut, table.o_entry.valid)],
                               row_valid)),
            fifo.w_data.eq(entry_in),
            entry_out.eq(fifo.r_data),
            writer.i_row.valid.eq(fifo.r_rdy),
            writer.i_row.payload.eq(entry_out.data),
            writer.direct.eq(entry_out.direct),
            writer.direct_addr.eq(entry_out.addr),
            writer.direct_bytes.eq(entry_out.bytes * ob),
            fifo.r_en.eq(writer.i_row.ready),
        ]
        pop = fifo.r_rdy & fifo.r_en
        m.d.sync += pending.eq(pending + ((issue & issue_last & ~is_table) | softmax.reserve)
                               - pop)
        m.d.comb += [
            *(softmax.instr[name].eq(field(word, Softmax, name))
              for name in fields_layout().members),
            softmax.start.eq(first_cycle & is_softmax),
            softmax.space.eq(pending < self._fifo_depth),
            softmax.written.eq(writer.row_done & is_softmax),
        ]

        # -- writer ------------------------------------------------------------------------------
        m.d.comb += [
            writer.start.eq(first_cycle),
            writer.ext.eq(common("ext")),
            writer.n0.eq(common("n0")),
            writer.stride0.eq(common("row_stride0")),
            writer.stride1.eq(common("row_stride1")),
            writer.row_bytes.eq(_pick([
                (is_store & raw, field(word, Store, "n") * 4),
                (is_store, field(word, Store, "n") * ob)],
                common("lanes", (Copy, Pool, Add)) * ob)),
            writer.flip.eq(common("flip_sign")),
        ]
        wiring.connect(m, wiring.flipped(self.o_write), writer.o_write)
        written = Signal(32)
        with m.If(accept):
            m.d.sync += written.eq(0)
        with m.Elif(writer.row_done & ~is_softmax):
            m.d.sync += written.eq(written + 1)
            with m.If(written + 1 == total):
                m.d.sync += [running.eq(0), done.eq(1)]
        with m.If((read_valid & is_table & (read_flags.row + 1 == total)) | softmax.done):
            m.d.sync += [running.eq(0), done.eq(1)]
        return m


def _raw_row(m, response, bias, cols):
    """Return STORE raw's row: `wrap32(acc + bias)` per lane, as 4 little-endian bytes each,
    registered OUTPUT_LATENCY times so that it leaves with the output stage's row."""
    stages = [Signal(32 * cols, name=f"raw{k}") for k in range(OUTPUT_LATENCY)]
    m.d.sync += stages[0].eq(Cat((response.payload.data[i] + bias[i])[:32]
                                 for i in range(cols)))
    m.d.sync += [stages[k].eq(stages[k - 1]) for k in range(1, OUTPUT_LATENCY)]
    return stages[-1]
