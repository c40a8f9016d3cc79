"""`SoftmaxUnit`: the row-normalisation unit: SOFTMAX's three passes over each row and its
reciprocal, or LAYERNORM's two passes and its per-row scalar stage, and their output chunks."""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from systolic.hdl.divider import Reciprocal
from systolic.hdl.instruction_fields import field_shape
from systolic.hdl.layernorm_scalar import LayerNormScalar
from systolic.hdl.lookup_table import LookupTable, load_layout
from systolic.hdl.row_lanes import (
    DIVIDE,
    IDLE,
    OUTPUT,
    PHASES,
    PRODUCT_SHAPES,
    STATS,
    SUM,
    WAIT,
    emit_lanes,
)
from systolic.hdl.row_maximum import MAXIMUM_LAG
from systolic.hdl.shared_multipliers import operands_layout, products_layout
from systolic.isa.instructions import LayerNorm, Softmax
from systolic.isa.layernorm import LAYERNORM_DONE_CYCLES, LAYERNORM_PASSES, LAYERNORM_ROW_CYCLES
from systolic.isa.softmax import SOFTMAX_DONE_CYCLES, SOFTMAX_PASSES, SOFTMAX_ROW_CYCLES

__all__ = ["SoftmaxUnit", "chunk_layout", "fields_layout"]


def fields_layout() -> data.StructLayout:
    """Return the fields the unit reads: SOFTMAX's and LAYERNORM's (their union, by name) but
    the opcode and `flip_sign` (the writer's)."""
    fields = {field.name: field_shape(field.width, field.signed)
              for cls in (Softmax, LayerNorm) for field in cls.FIELDS}
    del fields["flip_sign"]
    return data.StructLayout(fields)


def chunk_layout(lanes: int) -> data.StructLayout:
    """Return one output chunk: `lanes` int8 outputs, the byte address and the byte count."""
    return data.StructLayout({
        "data": data.ArrayLayout(signed(8), lanes),
        "addr": unsigned(32),
        "bytes": range(lanes + 1),
    })


class SoftmaxUnit(wiring.Component):
    """Execute SOFTMAX or LAYERNORM rows one after the other, bit-exact with `sim/golden`.

    Row i (C = ceil(length / lanes) spad_in rows from `in_row + i C`) is read one spad_in row
    per cycle, in passes:

    - SOFTMAX (docs/isa.md, "SOFTMAX and the exp table"): pass 1 keeps the maximum `mx` of
      the valid lanes; pass 2 looks up `E[mx - x]` per lane (the exp table, a `LookupTable`
      of u16 entries) and sums the valid lanes into S; the `Reciprocal` divider gives
      r = min(floor(2^46 / S), 2^32 - 1) in 17 cycles; pass 3 looks up E again and computes
      per lane p = rhe(E r / 2^31).
    - LAYERNORM (docs/isa.md, "LAYERNORM"): pass 1 sums d = x - in_zero_point and d^2 of the
      valid lanes into S1, S2; the `LayerNormScalar` stage (the divider in its wide mode and
      a digit-serial square root) gives the per-row operands a, b in 42 cycles; pass 2
      computes per lane p = rhe((d a - b) / 2^24) = rhe(t r / 2^(14 + k)).

    The lanes share one s17 x s52 multiplier each (E r, d^2 and d a) and the requantization
    rhe(p * multiplier / 2^(31 + shift)) + zero_point, clamped (`row_lanes.emit_lanes`). Each
    output chunk (a spad_in row's `lanes` outputs) leaves on `o_chunk` with its byte address
    inside the row's segment at `row_base(i)` and its byte count (the last chunk holds
    `length mod lanes` outputs when that is not 0).

    Timing (`systolic.sim.timing.store_timing.duration`): a row takes exactly `P C + F + b_i`
    cycles (SOFTMAX P = 3, F = 40; LAYERNORM P = 2, F = 60; b_i the aligned beats of its
    `length` bytes at row_base(i)), the cycle counter padding the work to that budget; it
    waits longer only while chunks it produced are not yet written (`written` counts them).
    `done` pulses 2 cycles after the last row's last cycle.

    Parameters
    ----------
    lanes : int
        The scratchpad row width `dim`.
    bus_bytes : int
        Bytes per write beat (a power of two), for b_i.
    external_products : tuple of str
        The lanes' multiplications (names of `row_lanes.PRODUCT_SHAPES`) whose products come
        from outside (the STORE unit's shared multipliers): adds `o_operands` and `i_products`.
    external_requant : bool
        Take p * multiplier from outside as registered pieces (the STORE unit's output stage
        computes them in its partial-product registers, `OutputStage.o_partials`): adds
        `o_requant` (p per lane and the multiplier) and `i_requant` (per lane, the sum of those
        pieces, p * multiplier of the previous cycle's operands); timing unchanged.

    Members
    -------
    instr : ``In(fields_layout())``
        The instruction's fields, held from `start` until `done`.
    layernorm : ``In(1)``
        The instruction is LAYERNORM (else SOFTMAX), held as `instr`.
    start : ``In(1)``
        Pulse in the instruction's first cycle (row 0's cycle 0).
    spad_en, spad_addr : ``Out(1)``, ``Out(32)``
        spad_in reads; `spad_data` holds the row in the next cycle.
    spad_data : ``In(ArrayLayout(signed(8), lanes))``
    i_load : ``In(stream.Signature(load_layout(lanes, 2), always_ready=True))``
        Exp table load beats (TABLE with `wide`).
    space : ``In(1)``
        The consumer can take one more chunk than those reserved so far: an output-pass read
        is issued only then, and `reserve` pulses with it.
    reserve : ``Out(1)``
    o_chunk : ``Out(stream.Signature(chunk_layout(lanes), always_ready=True))``
        Output chunks, 9 cycles after their output-pass read.
    written : ``In(1)``
        Pulse: the last beat of a chunk was written.
    done : ``Out(1)``
    lookup : ``Out(1)``
        The exp table looks up `lanes` entries in this cycle (SOFTMAX's passes 2 and 3: an
        energy event).
    o_operands, i_products : with `external_products` only
        Per lane, the operands of those multiplications and, in the same cycle, their products.
    o_requant, i_requant : with `external_requant` only
    """

    def __init__(self, *, lanes: int, bus_bytes: int, external_products: tuple[str, ...] = (),
                 external_requant: bool = False):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        exact_log2(bus_bytes)
        self._lanes, self._bus_bytes = lanes, bus_bytes
        self.external_products, self.external_requant = external_products, external_requant
        shapes = {name: shape for name, shape in PRODUCT_SHAPES.items()
                  if name in external_products}
        ports = {"o_operands": Out(operands_layout(shapes, lanes)),
                 "i_products": In(products_layout(shapes, lanes))} if shapes else {}
        if external_requant:
            p_bits, m_bits = PRODUCT_SHAPES["requant"]
            ports["o_requant"] = Out(data.StructLayout({
                "p": data.ArrayLayout(signed(p_bits), lanes), "multiplier": signed(m_bits)}))
            ports["i_requant"] = In(data.ArrayLayout(signed(p_bits + m_bits), lanes))
        super().__init__({
            **ports,
            "instr": In(fields_layout()),
            "layernorm": In(1),
            "start": In(1),
            "spad_en": Out(1),
            "spad_addr": Out(32),
            "spad_data": In(data.ArrayLayout(signed(8), lanes)),
            "i_load": In(stream.Signature(load_layout(lanes, 2), always_ready=True)),
            "space": In(1),
            "reserve": Out(1),
            "o_chunk": Out(stream.Signature(chunk_layout(lanes), always_ready=True)),
            "written": In(1),
            "done": Out(1),
            "lookup": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.table = table = LookupTable(lanes=self._lanes, entry=unsigned(16))
        m.submodules.reciprocal = reciprocal = Reciprocal()
        m.submodules.scalar = scalar = LayerNormScalar()
        wiring.connect(m, wiring.flipped(self.i_load), table.i_load)
        divided = Signal(name="divided")  # the row's per-row stage is done: its output pass
        m.d.comb += divided.eq(Mux(self.layernorm, scalar.done, reciprocal.done))
        read, base = self._sequence(m, divided)
        emit_lanes(m, self, read, base, divided, table, reciprocal, scalar)
        return m

    def _sequence(self, m, divided):
        """Phases, reads, the row pattern and the row budget; return the read's registered
        flags {valid, phase, lanes, first, last} (the data arrives with them) and the row's
        base address."""
        lanes, instr, ln = self._lanes, self.instr, self.layernorm
        log_bus = exact_log2(self._bus_bytes)
        phase = Signal(range(PHASES), name="phase")
        timer = Signal(32, name="timer")
        row = Signal(32, name="row")
        row_addr = Signal(32, name="row_addr")
        chunk = Signal(16, name="chunk")
        chunks = Signal(16, name="chunks")
        remaining = Signal(17, name="remaining")
        issued_all = Signal(name="issued_all")
        written = Signal(16, name="written_chunks")
        base = Signal(32, name="row_base")
        base1 = Signal(32, name="row_base1")
        r0 = Signal(32, name="row_r0")
        tail = Signal(2, name="tail")
        beats = Signal(17, name="row_beats")
        # The row's last cycle, budget - 1, registered every cycle: `chunks` is final once
        # the first pass has been read and `base` from the row's start, both long before the
        # row's WAIT phase compares `timer` with it (combinational, the product, the adders and
        # the comparison were the unit's critical path alone: 42.8 MHz, chunks -> timer)
        last_cycle = Signal(32, name="row_last_cycle")
        m.d.comb += [
            beats.eq(((base[:log_bus] + instr.length - 1) >> log_bus) + 1),
            self.done.eq(tail == 1),
        ]
        m.d.sync += last_cycle.eq(Mux(ln, LAYERNORM_PASSES * chunks + LAYERNORM_ROW_CYCLES,
                                      SOFTMAX_PASSES * chunks + SOFTMAX_ROW_CYCLES) + beats - 1)

        # SOFTMAX's pass 2 reads once the row maximum is final (`row_maximum.MAXIMUM_LAG`
        # cycles after pass 1's last read; the row's budget covers the wait)
        settle = Signal(range(MAXIMUM_LAG + 1), name="max_settle")
        reading = ((phase == STATS) | ((phase == SUM) & (settle == 0))
                    | ((phase == OUTPUT) & self.space))
        issue = Signal(name="issue")
        last = Signal(name="issue_last")
        m.d.comb += [
            issue.eq(reading & ~issued_all),
            last.eq(remaining <= lanes),
            self.spad_en.eq(issue),
            self.spad_addr.eq(row_addr + chunk),
            self.reserve.eq(issue & (phase == OUTPUT)),
        ]
        flags = Signal(data.StructLayout({"valid": 1, "phase": range(PHASES),
                                          "lanes": range(lanes + 1), "first": 1, "last": 1}),
                       name="read_flags")
        m.d.sync += [flags.valid.eq(issue), flags.phase.eq(phase), flags.last.eq(last),
                     flags.first.eq(chunk == 0),
                     flags.lanes.eq(Mux(last, remaining, lanes))]

        def begin_pass(next_phase):
            m.d.sync += [phase.eq(next_phase), chunk.eq(0), remaining.eq(instr.length),
                         issued_all.eq(0)]

        m.d.sync += timer.eq(timer + 1)
        with m.If(settle != 0):
            m.d.sync += settle.eq(settle - 1)
        with m.If(tail != 0):
            m.d.sync += tail.eq(tail - 1)
        with m.If(issue):
            m.d.sync += [chunk.eq(chunk + 1), remaining.eq(remaining - lanes)]
            with m.If(last):
                m.d.sync += issued_all.eq(1)
                with m.If((phase == STATS) & ~ln):
                    m.d.sync += [chunks.eq(chunk + 1), settle.eq(MAXIMUM_LAG)]
                    begin_pass(SUM)
                with m.Elif((phase == STATS) | (phase == SUM)):
                    m.d.sync += [chunks.eq(chunk + 1), phase.eq(DIVIDE)]
                with m.Else():
                    m.d.sync += phase.eq(WAIT)
        with m.If(divided):
            begin_pass(OUTPUT)
        with m.If(self.written):
            m.d.sync += written.eq(written + 1)

        row_over = (phase == WAIT) & (timer >= last_cycle) & (written == chunks)
        with m.If(self.start):
            m.d.sync += [timer.eq(1), row.eq(0), row_addr.eq(instr.in_row), written.eq(0),
                         base.eq(instr.ext), base1.eq(instr.ext), r0.eq(0)]
            begin_pass(STATS)
        with m.Elif(row_over):
            m.d.sync += [timer.eq(0), row.eq(row + 1), row_addr.eq(row_addr + chunks),
                         written.eq(0)]
            with m.If(r0 + 1 < instr.n0):
                m.d.sync += [r0.eq(r0 + 1), base.eq(base + instr.row_stride0)]
            with m.Else():
                m.d.sync += [r0.eq(0), base1.eq(base1 + instr.row_stride1),
                             base.eq(base1 + instr.row_stride1)]
            with m.If(row + 1 == instr.m):
                m.d.sync += [phase.eq(IDLE), tail.eq(Mux(ln, LAYERNORM_DONE_CYCLES - 1,
                                                         SOFTMAX_DONE_CYCLES - 1))]
            with m.Else():
                begin_pass(STATS)
        return flags, base
