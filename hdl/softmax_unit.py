"""`SoftmaxUnit`: SOFTMAX's three passes over each row, the reciprocal, and its output chunks."""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from systolic.hdl.divider import Reciprocal
from systolic.hdl.instruction_fields import field_shape
from systolic.hdl.lookup_table import LookupTable, load_layout
from systolic.hdl.round_shift import round_shift_parts
from systolic.isa.instructions import Softmax
from systolic.isa.softmax import SOFTMAX_DONE_CYCLES, SOFTMAX_PASSES, SOFTMAX_ROW_CYCLES

__all__ = ["SoftmaxUnit", "chunk_layout", "fields_layout"]

IDLE, MAX, SUM, DIVIDE, OUTPUT, WAIT = range(6)
"""Phases of a row."""


def fields_layout() -> data.StructLayout:
    """Return SOFTMAX's fields the unit reads: all but the opcode and `flip_sign` (the
    writer's)."""
    return data.StructLayout({field.name: field_shape(field.width, field.signed)
                              for field in Softmax.FIELDS if field.name != "flip_sign"})


def chunk_layout(lanes: int) -> data.StructLayout:
    """Return one output chunk: `lanes` int8 outputs, the byte address and the byte count."""
    return data.StructLayout({
        "data": data.ArrayLayout(signed(8), lanes),
        "addr": unsigned(32),
        "bytes": range(lanes + 1),
    })


class SoftmaxUnit(wiring.Component):
    """Execute SOFTMAX rows one after the other, bit-exact with `sim/golden/softmax.py`.

    docs/isa.md, "SOFTMAX and the exp table". Row i (C = ceil(length / lanes) spad_in rows
    from `in_row + i C`) is read three times, one spad_in row per cycle: pass 1 keeps the
    maximum `mx` of the valid lanes; pass 2 looks up `E[mx - x]` per lane (the exp table, a `LookupTable` of u16 entries) and sums
    the valid lanes into S; the `Reciprocal` divider then gives r = min(floor(2^46 / S),
    2^32 - 1) in 17 cycles; pass 3 looks up E again and computes, per lane, p = rhe(E r / 2^31)
    (a 16 x 32 multiplier), rhe(p * multiplier / 2^(31 + shift)) (an 18 x 32 multiplier),
    the zero point and the clamp, each product registered. Each output chunk (a spad_in row's
    `lanes` outputs) leaves on `o_chunk` with its byte address inside the row's segment at
    `row_base(i)` and its byte count (the last chunk holds `length mod lanes` outputs when
    that is not 0).

    Timing (`systolic.sim.timing.store_timing.duration`): a row takes exactly `3 C + 40 + b_i`
    cycles (b_i the aligned beats of its `length` bytes at row_base(i)), the cycle counter
    padding the work (about 2 C + 30 cycles plus pass 3 overlapped with its writes) to that
    budget; it waits longer only while chunks it produced are not yet written (`written`
    counts them). `done` pulses 2 cycles after the last row's last cycle.

    Parameters
    ----------
    lanes : int
        The scratchpad row width `dim`.
    bus_bytes : int
        Bytes per write beat (a power of two), for b_i.

    Members
    -------
    instr : ``In(fields_layout())``
        The instruction's fields, held from `start` until `done`.
    start : ``In(1)``
        Pulse in the instruction's first cycle (row 0's cycle 0).
    spad_en, spad_addr : ``Out(1)``, ``Out(32)``
        spad_in reads; `spad_data` holds the row in the next cycle.
    spad_data : ``In(ArrayLayout(signed(8), lanes))``
    i_load : ``In(stream.Signature(load_layout(lanes, 2), always_ready=True))``
        Exp table load beats (TABLE with `wide`).
    space : ``In(1)``
        The consumer can take one more chunk than those reserved so far: a pass-3 read is
        issued only then, and `reserve` pulses with it.
    reserve : ``Out(1)``
    o_chunk : ``Out(stream.Signature(chunk_layout(lanes), always_ready=True))``
        Output chunks, 7 cycles after their pass-3 read.
    written : ``In(1)``
        Pulse: the last beat of a chunk was written.
    done : ``Out(1)``
    lookup : ``Out(1)``
        The exp table looks up `lanes` entries in this cycle (passes 2 and 3: an energy event).
    """

    def __init__(self, *, lanes: int, bus_bytes: int):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        exact_log2(bus_bytes)
        self._lanes, self._bus_bytes = lanes, bus_bytes
        super().__init__({
            "instr": In(fields_layout()),
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
        wiring.connect(m, wiring.flipped(self.i_load), table.i_load)
        read = self._sequence(m, reciprocal)
        self._datapath(m, read, table, reciprocal)
        return m

    def _sequence(self, m, reciprocal):
        """Phases, reads, the row pattern and the row budget; return the read's registered
        flags {valid, phase, lanes, last} (the data arrives with them)."""
        lanes, instr = self._lanes, self.instr
        log_bus = exact_log2(self._bus_bytes)
        phase = Signal(range(6), name="phase")
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
        budget = Signal(32, name="row_budget")
        m.d.comb += [
            beats.eq(((base[:log_bus] + instr.length - 1) >> log_bus) + 1),
            budget.eq(SOFTMAX_PASSES * chunks + SOFTMAX_ROW_CYCLES + beats),
            self.done.eq(tail == 1),
        ]

        reading = ((phase == MAX) | (phase == SUM) | ((phase == OUTPUT) & self.space))
        issue = Signal(name="issue")
        last = Signal(name="issue_last")
        m.d.comb += [
            issue.eq(reading & ~issued_all),
            last.eq(remaining <= lanes),
            self.spad_en.eq(issue),
            self.spad_addr.eq(row_addr + chunk),
            self.reserve.eq(issue & (phase == OUTPUT)),
        ]
        flags = Signal(data.StructLayout({"valid": 1, "phase": range(6), "lanes": range(lanes + 1),
                                          "first": 1, "last": 1}), name="read_flags")
        m.d.sync += [flags.valid.eq(issue), flags.phase.eq(phase), flags.last.eq(last),
                     flags.first.eq(chunk == 0),
                     flags.lanes.eq(Mux(last, remaining, lanes))]

        def begin_pass(next_phase):
            m.d.sync += [phase.eq(next_phase), chunk.eq(0), remaining.eq(instr.length),
                         issued_all.eq(0)]

        m.d.sync += timer.eq(timer + 1)
        with m.If(tail != 0):
            m.d.sync += tail.eq(tail - 1)
        with m.If(issue):
            m.d.sync += [chunk.eq(chunk + 1), remaining.eq(remaining - lanes)]
            with m.If(last):
                m.d.sync += issued_all.eq(1)
                with m.If(phase == MAX):
                    m.d.sync += chunks.eq(chunk + 1)
                    begin_pass(SUM)
                with m.Elif(phase == SUM):
                    m.d.sync += phase.eq(DIVIDE)
                with m.Else():
                    m.d.sync += phase.eq(WAIT)
        with m.If(reciprocal.done):
            begin_pass(OUTPUT)
        with m.If(self.written):
            m.d.sync += written.eq(written + 1)

        row_over = (phase == WAIT) & (timer >= budget - 1) & (written == chunks)
        with m.If(self.start):
            m.d.sync += [timer.eq(1), row.eq(0), row_addr.eq(instr.in_row), written.eq(0),
                         base.eq(instr.ext), base1.eq(instr.ext), r0.eq(0)]
            begin_pass(MAX)
        with m.Elif(row_over):
            m.d.sync += [timer.eq(0), row.eq(row + 1), row_addr.eq(row_addr + chunks),
                         written.eq(0)]
            with m.If(r0 + 1 < instr.n0):
                m.d.sync += [r0.eq(r0 + 1), base.eq(base + instr.row_stride0)]
            with m.Else():
                m.d.sync += [r0.eq(0), base1.eq(base1 + instr.row_stride1),
                             base.eq(base1 + instr.row_stride1)]
            with m.If(row + 1 == instr.m):
                m.d.sync += [phase.eq(IDLE), tail.eq(SOFTMAX_DONE_CYCLES - 1)]
            with m.Else():
                begin_pass(MAX)
        self._row_base = base
        return flags

    def _datapath(self, m, flags, table, reciprocal):
        """Pass 1's maximum, pass 2's sum and the divider's start, pass 3's outputs."""
        lanes = self._lanes
        x = self.spad_data
        in_lane = [Signal(name=f"lane{j}_valid") for j in range(lanes)]
        m.d.comb += [valid.eq(j < flags.lanes) for j, valid in enumerate(in_lane)]

        # Pass 1: the maximum of the valid lanes (invalid lanes count as -128).
        mx = Signal(signed(8), name="row_max")
        best = Signal(signed(8), name="chunk_max")
        candidates = [Mux(in_lane[j], x[j], -128) for j in range(lanes)]
        result = Mux(flags.first, -128, mx)
        for value in candidates:
            result = Mux(value > result, value, result)
        m.d.comb += best.eq(result)
        with m.If(flags.valid & (flags.phase == MAX)):
            m.d.sync += mx.eq(best)

        # Passes 2 and 3: E[mx - x] per lane, one cycle later.
        looked = Signal(data.StructLayout({"phase": range(6), "last": 1,
                                           "mask": data.ArrayLayout(1, lanes)}), name="looked")
        m.d.comb += [table.i_index.valid.eq(flags.valid & (flags.phase != MAX)),
                     self.lookup.eq(table.i_index.valid)]
        for j in range(lanes):
            m.d.comb += table.i_index.payload[j].eq((mx - x[j])[:8])
        m.d.sync += [looked.phase.eq(flags.phase), looked.last.eq(flags.last)]
        m.d.sync += [looked.mask[j].eq(in_lane[j]) for j in range(lanes)]
        entry = table.o_entry.payload

        # Pass 2: S, then the divider.
        chunk_sum = Signal(16 + max(1, (lanes - 1).bit_length()), name="chunk_sum")
        total = Signal(32, name="row_sum")
        summed = Signal(data.StructLayout({"valid": 1, "last": 1}), name="summed")
        finished = Signal(name="sum_finished")
        summing = table.o_entry.valid & (looked.phase == SUM)
        m.d.sync += [
            chunk_sum.eq(sum(Mux(looked.mask[j], entry[j], 0) for j in range(lanes))),
            summed.valid.eq(summing), summed.last.eq(summing & looked.last),
            finished.eq(summed.last),
            reciprocal.divisor.eq(total),
            reciprocal.start.eq(finished),
        ]
        with m.If(flags.valid & (flags.phase == MAX)):
            m.d.sync += total.eq(0)
        with m.Elif(summed.valid):
            m.d.sync += total.eq(total + chunk_sum)
        self._outputs(m, looked, table, reciprocal)

    def _outputs(self, m, looked, table, reciprocal):
        """Pass 3: p, the requantization and the chunk's address and byte count."""
        lanes, instr = self._lanes, self.instr
        entry = table.o_entry.payload
        stage_valid = [Signal(name=f"out_valid{k}") for k in range(1, 5)]
        looked_out = Signal(name="out_looked")
        m.d.comb += looked_out.eq(table.o_entry.valid & (looked.phase == OUTPUT))
        m.d.sync += [stage_valid[0].eq(looked_out),
                     *(stage_valid[k].eq(stage_valid[k - 1]) for k in range(1, 4))]
        product = Signal(data.ArrayLayout(unsigned(48), lanes), name="exp_times_r")
        p = Signal(data.ArrayLayout(unsigned(18), lanes), name="p")
        scaled = Signal(data.ArrayLayout(signed(51), lanes), name="p_times_multiplier")
        rounded = Signal(data.StructLayout({"floor": data.ArrayLayout(signed(10), lanes),
                                            "round_up": data.ArrayLayout(1, lanes)}),
                         name="rounded")
        out = self.o_chunk.payload
        amount = (instr.shift + 31).as_unsigned()[:6]
        for j in range(lanes):
            guard, below = product[j][30], product[j][:30].any()
            floor = product[j][31:]
            q_floor, q_up = round_shift_parts(scaled[j], amount)
            raised = Mux(q_floor < -257, -257, q_floor)
            offset = rounded.floor[j] + rounded.round_up[j] + instr.zero_point
            high = Mux(offset < instr.lo, instr.lo, offset)
            m.d.sync += [
                product[j].eq(entry[j] * reciprocal.quotient),
                p[j].eq(floor + (guard & (below | floor[0]))),
                scaled[j].eq(p[j] * instr.multiplier),
                rounded.floor[j].eq(Mux(raised > 255, 255, raised)),
                rounded.round_up[j].eq(q_up),
                out.data[j].eq(Mux(high > instr.hi, instr.hi, high)),
            ]
        m.d.sync += self.o_chunk.valid.eq(stage_valid[3])

        # The chunk's place in the row's segment.
        addr = Signal(32, name="chunk_addr")
        left = Signal(17, name="row_bytes_left")
        m.d.comb += [out.addr.eq(addr), out.bytes.eq(Mux(left < lanes, left, lanes))]
        with m.If(reciprocal.done):
            m.d.sync += [addr.eq(self._row_base), left.eq(instr.length)]
        with m.Elif(self.o_chunk.valid):
            m.d.sync += [addr.eq(addr + lanes), left.eq(left - lanes)]
