"""The STORE unit's datapaths per instruction family, added to its module by `StoreUnit`:
POOL and ADD through the vector unit (`vector_path`); the finished rows of STORE, COPY, POOL
and ADD with the activation table and STORE raw (`output_rows`); TABLE's loads and the start
of SOFTMAX and LAYERNORM (`table_loads`). Each takes the unit (`unit`: its ports and configuration), the held
instruction and the reader's strobes (`systolic.hdl.store_state`)."""

from amaranth.hdl import Cat, Mux, Signal, signed
from amaranth.lib import data

from systolic.hdl.output_stage import LATENCY as OUTPUT_LATENCY
from systolic.hdl.ports import params_row_layout
from systolic.hdl.softmax_unit import fields_layout
from systolic.hdl.store_state import field, pick
from systolic.hdl.vector_unit import PRODUCT, SCALED_SUM
from systolic.isa.instructions import Add, Copy, LayerNorm, Pool, Softmax, Store, Table

__all__ = ["output_rows", "table_loads", "vector_path"]


def vector_path(m, unit, instr, reads, vector):
    """POOL and ADD: the spad_in reads through the vector unit, its mode and parameters."""
    is_add = instr.is_[Add]

    def add_or_pool(add_name, pool_name):
        return Mux(is_add, instr.field(Add, add_name), instr.field(Pool, pool_name))

    mode = Mux(is_add, Mux(instr.field(Add, "mul"), PRODUCT, SCALED_SUM),
               instr.field(Pool, "mode"))
    m.d.comb += [
        vector.i_elem.valid.eq(reads.valid & (instr.is_[Pool] | is_add)),
        vector.i_elem.payload.data.eq(unit.spad_read.data),
        vector.i_elem.payload.sel.eq(reads.flags.sel),
        vector.i_elem.payload.first.eq(reads.flags.first),
        vector.i_elem.payload.last.eq(reads.flags.last),
        vector.o_row.ready.eq(1),
        vector.mode.eq(mode),
        vector.multiplier[0].eq(add_or_pool("multiplier_a", "multiplier")),
        vector.multiplier[1].eq(instr.field(Add, "multiplier_b")),
        vector.zero_in[0].eq(add_or_pool("zp_a", "zp_in")),
        vector.zero_in[1].eq(instr.field(Add, "zp_b")),
        vector.shift.eq(add_or_pool("shift", "shift")),
        vector.zero_out.eq(add_or_pool("zp_out", "zp_out")),
        vector.lo.eq(add_or_pool("lo", "lo")),
        vector.hi.eq(add_or_pool("hi", "hi")),
    ]


def output_rows(m, unit, instr, control, reads, stage, vector, table):
    """STORE, COPY, POOL, ADD: return each finished row (bits, valid) for the FIFO: the
    output stage's (STORE), the spad_in row (COPY) or the vector unit's, mapped through the
    activation table with `lut` (one cycle later), STORE raw's int32 lanes instead."""
    cfg, is_ = unit.config, instr.is_
    params = _params(m, unit, control)
    m.d.comb += [
        stage.i_acc.valid.eq(unit.acc_read.resp.valid),
        stage.i_acc.payload.data.eq(unit.acc_read.resp.payload.data),
        stage.bias.eq(params.bias),
        stage.multiplier.eq(params.multiplier),
        stage.zero_point.eq(instr.field(Store, "zero_point")),
        stage.lo.eq(instr.field(Store, "lo")),
        stage.hi.eq(instr.field(Store, "hi")),
        stage.o_q.ready.eq(1),
        *(stage.shift[i].eq(params.shift[i][:6].as_signed()) for i in range(cfg.cols)),
    ]
    row_layout = data.ArrayLayout(signed(8 * cfg.operand_bytes), cfg.dim)
    row, mapped = Signal(row_layout, name="row"), Signal(row_layout, name="mapped")
    row_valid, lut = Signal(name="row_valid"), Signal(name="lut")
    m.d.comb += [
        row_valid.eq(stage.o_q.valid | vector.o_row.valid | (reads.valid & is_[Copy])),
        lut.eq((is_[Store] | is_[Copy]) & instr.common("lut", (Store, Copy))),
        table.i_index.valid.eq(row_valid & lut),
    ]
    for i in range(cfg.dim):
        stored = stage.o_q.payload.data[i] if i < cfg.cols else 0
        m.d.comb += [
            row[i].eq(pick([(is_[Store], stored), (is_[Copy], unit.spad_read.data[i])],
                           vector.o_row.payload[i])),
            table.i_index.payload[i].eq(Cat(row[i][:7], ~row[i][7])),  # y + 128
            mapped[i].eq(table.o_entry.payload[i]),
        ]
    raw = is_[Store] & instr.field(Store, "raw")
    bits = pick([(raw, _raw_row(m, unit.acc_read.resp, params.bias, cfg.cols)),
                 (lut, mapped.as_value())], row.as_value())
    return bits, Mux(lut, table.o_entry.valid, row_valid)


def _params(m, unit, control):
    """Return STORE's params row: read while idle, captured in the instruction's first
    cycle."""
    params = Signal(params_row_layout(unit.config.cols))
    m.d.comb += [
        unit.params_read.addr.eq(field(unit.i_instr.payload.payload, Store, "param_row")),
        unit.params_read.en.eq(control.accept),
    ]
    with m.If(control.first_cycle):
        m.d.sync += params.eq(unit.params_read.data)
    return params


def table_loads(m, unit, instr, control, reads, table, softmax):
    """TABLE's row loads (the activation table, or with `wide` the exp table) and the start,
    mode and fields of SOFTMAX or LAYERNORM; return TABLE's finish (its last row loads now)."""
    wide = instr.field(Table, "wide")
    loading = reads.valid & instr.is_[Table]
    m.d.comb += [
        table.i_load.valid.eq(loading & ~wide),
        table.i_load.payload.row.eq(reads.flags.row),
        softmax.i_load.valid.eq(loading & wide),
        softmax.i_load.payload.row.eq(reads.flags.row),
        softmax.start.eq(control.first_cycle & instr.row_norm),
        softmax.layernorm.eq(instr.is_[LayerNorm]),
        *(softmax.instr[name].eq(_row_norm_field(instr, name))
          for name in fields_layout().members),
    ]
    for i in range(unit.config.dim):
        m.d.comb += [
            table.i_load.payload.data[i].eq(unit.spad_read.data[i]),
            softmax.i_load.payload.data[i].eq(unit.spad_read.data[i]),
            softmax.spad_data[i].eq(unit.spad_read.data[i]),
        ]
    return loading & (reads.flags.row + 1 == reads.total)


def _row_norm_field(instr, name):
    """Return field `name` of the held SOFTMAX or LAYERNORM (LAYERNORM's own fields: of the
    word read as LAYERNORM)."""
    if name in {field.name for field in Softmax.FIELDS}:
        return instr.common(name, (LayerNorm, Softmax))
    return instr.field(LayerNorm, name)


def _raw_row(m, response, bias, cols):
    """Return STORE raw's row: `wrap32(acc + bias)` per lane, as 4 little-endian bytes each,
    registered OUTPUT_LATENCY times so that it leaves with the output stage's row."""
    stages = [Signal(32 * cols, name=f"raw{k}") for k in range(OUTPUT_LATENCY)]
    m.d.sync += stages[0].eq(Cat((response.payload.data[i] + bias[i])[:32]
                                 for i in range(cols)))
    m.d.sync += [stages[k].eq(stages[k - 1]) for k in range(1, OUTPUT_LATENCY)]
    return stages[-1]
