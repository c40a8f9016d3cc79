"""The LOAD unit (LD): gathers rows from external memory into spad_in, spad_wt or params.

Pipeline: the saturated counts of the word offered on `i_instr` registered every cycle
(`counts`) -> decode into the `job` register as the instruction is taken (first offsets and
counts from the word's decode hints and `counts`, contiguity conditions) -> `SegmentWalker`
(one aligned read request per cycle) -> a delay line of `mem_latency` stages carrying each
request's placement -> `RowGather` (byte shifter and row buffer) -> the write port of the
target memory.

Timing (exact; `systolic.sim.timing.load_timing`): an instruction taken on `i_instr` in cycle 0
by an idle unit issues its first request in cycle 2 and its `beats` requests in consecutive
cycles (the model memory is always ready); its last row is written, and `o_done` strobes, in
cycle `beats + mem_latency + 2`. `i_instr.ready` rises when at most one request of the
instructions in the unit is left after this cycle, so the next LOAD is taken in cycle
`max(beats, 2)` and its requests follow the current one's last request with no gap.

Input contract: the word taken in cycle t is on `i_instr.payload` in cycle t - 1 too (`valid`
may rise in cycle t). The dispatcher's queue gives this: its head's word is on `o_issue`'s
payload from the first cycle it heads the queue (the cycle after its acceptance, or after the
previous LOAD's issue), and a LOAD is issued at the earliest three cycles after its acceptance
and two after the previous LOAD (`busy` >= 2).

Cost note: the decode has no divider: the LOAD word carries the start of its element pattern
(`c0`, `j0`, `base_i0`, `base_j0`) and the j-wrap condition (`j_contiguous_1`,
`j_contiguous_2`) as hints the encoder derives from `k0` (`systolic.isa.load.load_hints`).
Its two small products (DSP blocks on the FPGA: the elements to the first j wrap, `jrun0`, and
a j group's, `jgroup`) start at the `counts` register, so the cycle of the take holds only
them and a subtraction, and the cycle before only the saturations (a 32-bit subtraction
deciding saturation, an OR of its high bits, a mux).
"""

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig
from systolic.hdl.dma_gather import RowGather
from systolic.hdl.instruction_fields import (
    completion_signature,
    instruction_layout,
    instruction_signature,
)
from systolic.hdl.load_walker import SegmentWalker, job_layout, meta_layout
from systolic.hdl.ports import (
    addr_width,
    memory_write_signature,
    params_row_layout,
    spad_row_layout,
)
from systolic.isa.instructions import Load, LoadTarget
from systolic.isa.memories import Memory, depth, params_row_bytes

__all__ = ["SETUP_CYCLES", "LoadUnit"]

SETUP_CYCLES = 2
"""Cycles from taking an instruction (idle unit) to its first read request."""


class LoadUnit(wiring.Component):
    """Execute LOAD instructions (docs/isa.md, "LOAD"), in order, one request per cycle.

    Members
    -------
    i_instr : In(stream {payload: 512, tag: 4})
        LOAD words from the dispatcher; ready from `max(beats, 2)` cycles after the previous
        instruction was taken (`systolic.sim.timing.load_timing`), while the read channel flows.
        The word taken in cycle t must be on `payload` in cycle t - 1 too (module docstring).
    o_done : Out(stream {tag}), always ready
        Strobes in the cycle the instruction's last row is written.
    o_req : Out(stream {addr: 32})
        External read requests, aligned to `bus_bytes`; backpressure holds the unit.
    i_resp : In(stream {data: bus_bytes*8}), always ready
        Read data, exactly `mem_latency` cycles after each request was taken, in order.
    spad_in, spad_wt, params : Out(memory_write_signature(...))
        Write ports: `en` for one cycle per row written, `addr` and `data` valid with it.
    o_read_bytes : Out(range(bus_bytes + 1))
        The bytes of its segment that the read request taken in this cycle carries (those its
        placement enables; 0 without a request): the energy event `ext_read_bytes`.

    Latency and throughput: see the module docstring (duration `beats + mem_latency + 2`).
    Buffering: the delay line holds the placements of the `mem_latency` requests in flight and
    the row gatherer takes one response per cycle, so responses never need backpressure.
    """

    def __init__(self, config: ArrayConfig, *, mem_latency: int = 8) -> None:
        if not isinstance(mem_latency, int) or mem_latency < 0:
            raise ValueError(f"mem_latency must be a whole number of cycles, not {mem_latency!r}")
        self.config = config
        self.mem_latency = mem_latency
        self.row_bytes = max(config.spad_row_bytes, params_row_bytes(config))
        self.cnt_width = config.dim.bit_length() + 2
        self.length_width = self.row_bytes.bit_length()
        self.depths = {target: depth(config, target.memory) for target in LoadTarget}
        self.row_width = max(addr_width(d) for d in self.depths.values())
        super().__init__({
            "i_instr": In(instruction_signature()),
            "o_done": Out(completion_signature()),
            "o_req": Out(stream.Signature(data.StructLayout({"addr": 32}))),
            "o_read_bytes": Out(range(config.bus_bytes + 1)),
            "i_resp": In(stream.Signature(data.StructLayout({"data": 8 * config.bus_bytes}),
                                          always_ready=True)),
            "spad_in": Out(memory_write_signature(
                depth(config, Memory.SPAD_IN), spad_row_layout(config.input_width, config.dim))),
            "spad_wt": Out(memory_write_signature(
                depth(config, Memory.SPAD_WT), spad_row_layout(config.weight_width, config.dim))),
            "params": Out(memory_write_signature(
                depth(config, Memory.PARAMS), params_row_layout(config.cols))),
        })

    def _sat(self, value: Value) -> Value:
        """Return `value` saturated to `cnt_width` bits: a non-zero bit above the width (an OR
        of the high bits, not a comparator: no carry chain after the subtractions feeding it)."""
        width = self.cnt_width
        return Mux(value[width:].any(), (1 << width) - 1, value[:width])

    def _counts(self, m: Module, word: data.View) -> data.View:
        """Return the saturated counts of LOAD `word`, registered: in cycle t they hold those of
        the word offered in cycle t - 1 (`i_instr.payload`, loaded every cycle, no enable).

        Fields (each `cnt_width` bits): `run` and `n_mid` saturated, `j_left = sat(n_mid - j0)`
        (the c-runs to the first j wrap) and `to_cwrap = sat(run - c0)` (the elements to the
        first c wrap).
        """
        counts = Signal(data.StructLayout({name: self.cnt_width for name in (
            "run", "n_mid", "j_left", "to_cwrap")}), name="counts")
        saturated = (1 << self.cnt_width) - 1
        # sat(n_mid - j0) and sat(run - c0) with the value's low bits from a narrow
        # subtraction (the same bits) beside the full one, which only decides saturation.
        j_big, j_low = self._sat_difference(word.n_mid, word.j0)
        c_big, c_low = self._sat_difference(word.run, word.c0)
        m.d.sync += [
            counts.run.eq(self._sat(word.run)), counts.n_mid.eq(self._sat(word.n_mid)),
            counts.j_left.eq(Mux(j_big, saturated, j_low)),
            counts.to_cwrap.eq(Mux(c_big, saturated, c_low)),
        ]
        return counts

    def _decode(self, m: Module, word: data.View, counts: data.View, tag: Signal) -> Signal:
        """Return the job (constants and start position) of LOAD `word`, combinationally, from
        the word and its registered `counts` (`_counts` of the same word, offered a cycle
        earlier): the products start at registers."""
        config = self.config
        widths = (self.cnt_width, self.length_width, self.row_width)
        ob = config.operand_bytes

        job = Signal(job_layout(*widths))
        k, start = job.consts, job.start
        is_params = word.mem == int(LoadTarget.PARAMS)
        ob_shift = ob.bit_length() - 1  # operand_bytes is 1 or 2 (widths of 4 to 16 bits)
        # The word's decode hints (docs/isa.md, "LOAD") give the start of the element pattern
        # and the j-wrap condition: no divider, no multiplier, one adder per start field.
        off0 = (word.base_j0 + (word.c0 << ob_shift))[:32]
        cond_c = (word.stride_mid == (word.run << ob_shift)) | (word.n_mid == 1)
        cond_j = word.j_contiguous_1 if ob == 1 else word.j_contiguous_2
        # The start position repeats some constants: both halves are driven from the same
        # expressions, never one field of `job` from another (Verilator sees a signal that
        # feeds itself as circular logic, UNOPTFLAT, even when no bit depends on itself).
        first_off, first_i = Mux(is_params, 0, off0), Mux(is_params, 0, word.base_i0)
        first_j = Mux(is_params, 0, word.base_j0)
        # Elements to the j wrap (the walker's `jrun`): (j_left - 1) * run + to_cwrap as
        # j_left * run - (run - to_cwrap), from registers (a saturated j_left gives the
        # saturated product (2**cnt_width - 1) * run), the small difference beside the
        # product; `jgroup` = n_mid * run.
        before_cwrap = Signal(self.cnt_width, name="before_cwrap")
        m.d.comb += before_cwrap.eq(counts.run - counts.to_cwrap)
        jrun0 = counts.j_left * counts.run - before_cwrap
        jgroup = counts.n_mid * counts.run
        row_length = Mux(is_params, params_row_bytes(config), word.length)
        m.d.comb += [
            k.length.eq(row_length), start.rest.eq(row_length),
            k.ob_shift.eq(Mux(is_params, 0, ob_shift)),
            k.cond_c.eq(is_params | cond_c), k.cond_j.eq(is_params | cond_j),
            k.run_sat.eq(counts.run), k.n_mid_sat.eq(counts.n_mid),
            k.stride_mid.eq(word.stride_mid), k.stride_outer.eq(word.stride_outer),
            k.off0.eq(first_off), k.base_i0.eq(first_i), k.base_j0.eq(first_j),
            k.to_cwrap0.eq(counts.to_cwrap), k.j_left0.eq(counts.j_left), k.jrun0.eq(jrun0),
            k.jgroup.eq(jgroup), start.jrun.eq(jrun0),
            k.n0.eq(word.n0), k.stride0.eq(word.row_stride0), k.stride1.eq(word.row_stride1),
            k.mem.eq(word.mem), k.flip.eq(word.flip_sign), k.tag.eq(tag),
            start.off.eq(first_off), start.base_i.eq(first_i), start.base_j.eq(first_j),
            start.j_left.eq(counts.j_left), start.to_cwrap.eq(counts.to_cwrap),
            start.done.eq(0),
            start.row_base.eq(word.ext), start.r1_base.eq(word.ext), start.r0.eq(0),
            start.rows_left.eq(word.count), start.row.eq(word.row),
        ]
        return job

    def _sat_difference(self, a: Value, b: Value) -> tuple[Value, Value]:
        """Return (a - b saturates to `cnt_width` bits, the low `cnt_width` bits of a - b):
        the low bits from a `cnt_width`-bit subtraction, the test from the full one."""
        width = self.cnt_width
        return (a - b)[width:].any(), (a[:width] - b[:width])[:width]

    def _delay(self, m: Module, valid: Signal, payload: Signal) -> tuple[Signal, Signal]:
        """Return (`valid`, `payload`) delayed by `mem_latency` cycles (a shift register)."""
        for stage in range(self.mem_latency):
            next_valid = Signal(name=f"flight_valid_{stage}")
            next_payload = Signal.like(payload, name=f"flight_{stage}")
            m.d.sync += [next_valid.eq(valid), next_payload.eq(payload)]
            valid, payload = next_valid, next_payload
        return valid, payload

    def _write_rows(self, m: Module, row: data.View) -> None:
        """Drive the three write ports from a completed row of bytes."""
        config = self.config
        ob = config.operand_bytes
        raw = row.payload.data.as_value()
        meta = row.payload.meta
        for target, port, width in (
            (LoadTarget.SPAD_IN, self.spad_in, config.input_width),
            (LoadTarget.SPAD_WT, self.spad_wt, config.weight_width),
        ):
            elements = [raw[8 * ob * e:][:width] for e in range(config.dim)]
            m.d.comb += [
                port.en.eq(row.valid & (meta.mem == int(target))),
                port.addr.eq(meta.row),
                port.data.eq(Cat(*elements)),
            ]
        # A params row's bytes (biases, multipliers, shifts) are its layout's bits, in order.
        params_bits = params_row_layout(config.cols).size
        m.d.comb += [
            self.params.en.eq(row.valid & (meta.mem == int(LoadTarget.PARAMS))),
            self.params.addr.eq(meta.row),
            self.params.data.eq(raw[:params_bits]),
        ]

    def _read_bytes(self, m: Module, valid: Signal, place: data.View) -> None:
        """Drive `o_read_bytes`: the row bytes `lo <= p < hi` the beat covers (its bytes land
        on `row_bytes - sel <= p < row_bytes - sel + bus_bytes`; compared with `sel` added)."""
        top, bus = self.row_bytes, self.config.bus_bytes
        seg_lo, seg_hi = place.lo + place.sel, place.hi + place.sel
        lo = Mux(seg_lo > top, seg_lo, top)
        hi = Mux(seg_hi < top + bus, seg_hi, top + bus)
        m.d.comb += self.o_read_bytes.eq(Mux(valid & (hi > lo), hi - lo, 0))

    def elaborate(self, platform: object) -> Module:
        """Build decode registers, walker, in-flight delay line, gatherer and write ports."""
        m = Module()
        widths = (self.cnt_width, self.length_width, self.row_width)
        bus = self.config.bus_bytes
        m.submodules.walker = walker = SegmentWalker(
            bus_bytes=bus, row_bytes=self.row_bytes, cnt_width=self.cnt_width,
            length_width=self.length_width, row_width=self.row_width)
        m.submodules.gather = gather = RowGather(
            bus_bytes=bus, row_bytes=self.row_bytes, meta_layout=meta_layout(self.row_width))

        # The job register: the instruction decoded as it is taken.
        word = data.View(instruction_layout(Load), self.i_instr.payload.payload)
        decoded = self._decode(m, word, self._counts(m, word), self.i_instr.payload.tag)
        job_valid = Signal()
        job = Signal(job_layout(*widths))
        m.d.comb += self.i_instr.ready.eq(walker.o_almost_idle)
        with m.If(walker.i_job.ready):
            m.d.sync += job_valid.eq(0)
        with m.If(self.i_instr.valid & self.i_instr.ready):
            m.d.sync += job_valid.eq(1)
        # The job register loads whatever is offered while it holds no job for the walker (an
        # instruction is only taken then: `o_almost_idle` is low while `job_valid` is high and
        # the walker does not take the job): its enable does not wait for `i_instr.ready`.
        with m.If(~job_valid | walker.i_job.ready):
            m.d.sync += job.eq(decoded)
        m.d.comb += [walker.i_job.valid.eq(job_valid), walker.i_job.payload.eq(job)]

        wiring.connect(m, wiring.flipped(self.o_req), walker.o_req)
        self._read_bytes(m, walker.o_beat.valid, walker.o_beat.payload.place)

        valid, beat = self._delay(m, walker.o_beat.valid, walker.o_beat.payload.as_value())
        beat_view = data.View(walker.o_beat.payload.shape(), beat)
        m.d.comb += [
            gather.i_beat.valid.eq(valid & self.i_resp.valid),
            gather.i_beat.payload.data.eq(self.i_resp.payload.data),
            gather.i_beat.payload.place.eq(beat_view.place),
            gather.i_beat.payload.meta.eq(beat_view.meta),
        ]

        self._write_rows(m, gather.o_row)
        m.d.comb += [
            self.o_done.valid.eq(gather.o_row.valid & gather.o_row.payload.meta.last),
            self.o_done.payload.tag.eq(gather.o_row.payload.meta.tag),
        ]
        return m
