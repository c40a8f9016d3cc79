"""The LOAD unit's address generator: walks rows, segments and beats (`SegmentWalker`).

A *job* is one decoded LOAD (`job_layout`): constants (`consts`) and the position of its first
segment (`start`). The walker turns it into one aligned read request per cycle, covering every
segment of every row in order (docs/isa.md, "Address patterns"), each with the placement of its
beat in the row (`systolic.hdl.dma_gather`) and pass-through `meta` {row, mem, last, tag}.

Segments follow from the element pattern without division: a row is a sequence of *c-runs*
(contiguous runs of `run` elements, partial at the ends); a segment is a maximal chain of c-runs
joined by contiguous boundaries. A boundary inside a j group is contiguous iff `cond_c`
(`stride_mid == run * operand_bytes`, or `n_mid == 1` where none exists), a boundary that wraps
j iff `cond_j`. The walker keeps the byte offsets of the current (i, 0, 0) and (i, j, 0)
elements (`base_i`, `base_j`), the c-runs left before a j wrap (`j_left`) and the elements left
in the current c-run (`to_cwrap`), and, for `cond_c` without `cond_j`, the elements left before
the j wrap (`jrun = (j_left - 1) * run + to_cwrap`: `jrun0` at a row's start, `jgroup` after a
wrap, both computed with the job, so the step has no multiplier); counts are saturated to
`2**cnt_width - 1` (more than twice `dim`, so saturation never changes a segment of a row of at
most `dim` elements).

Params rows are one segment each (`cond_c = cond_j = 1`, one-byte elements).
"""

from typing import NamedTuple

from amaranth.hdl import Cat, Module, Mux, Signal, Value, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.dma_gather import placement_layout
from systolic.hdl.range_overlap import at_most

__all__ = ["SegmentWalker", "consts_layout", "job_layout", "meta_layout", "position_layout"]


class Step(NamedTuple):
    """One segment step: the segment's register values, the position after it, and whether it
    ends its row, is its instruction's last and is that last and one beat long."""

    segment: dict[str, Value]
    after: data.View
    ends_row: Value
    last: Value
    single_last: Value


def consts_layout(cnt_width: int, length_width: int, row_width: int) -> data.StructLayout:
    """Return the per-instruction constants of a job."""
    return data.StructLayout({
        "length": length_width, "ob_shift": 1, "cond_c": 1, "cond_j": 1,
        "run_sat": cnt_width, "n_mid_sat": cnt_width,
        "stride_mid": signed(32), "stride_outer": signed(32),
        "off0": 32, "base_i0": 32, "base_j0": 32, "to_cwrap0": cnt_width, "j_left0": cnt_width,
        "jrun0": 2 * cnt_width + 1, "jgroup": 2 * cnt_width + 1,
        "n0": 32, "stride0": signed(32), "stride1": signed(32),
        "mem": 2, "flip": 1, "tag": 4,
    })


def position_layout(cnt_width: int, length_width: int, row_width: int) -> data.StructLayout:
    """Return the walker position: where the next segment starts."""
    return data.StructLayout({
        "off": 32, "base_i": 32, "base_j": 32, "j_left": cnt_width, "to_cwrap": cnt_width,
        "jrun": 2 * cnt_width + 1,
        "done": length_width, "rest": length_width, "row_base": 32, "r1_base": 32, "r0": 32, "rows_left": 32,
        "row": row_width,
    })


def job_layout(cnt_width: int, length_width: int, row_width: int) -> data.StructLayout:
    """Return the layout of one job: {consts, start}."""
    return data.StructLayout({
        "consts": consts_layout(cnt_width, length_width, row_width),
        "start": position_layout(cnt_width, length_width, row_width),
    })


def meta_layout(row_width: int) -> data.StructLayout:
    """Return the pass-through information of a beat: {row, mem, last (instruction), tag}."""
    return data.StructLayout({"row": row_width, "mem": 2, "last": 1, "tag": 4})


class SegmentWalker(wiring.Component):
    """Issue the aligned beat requests of LOAD jobs, one per cycle, with their placements.

    Members
    -------
    i_job : In(stream job_layout)
        Decoded LOADs; a job is taken in the cycle its predecessor's last beat is issued (or
        whenever the walker is idle), so consecutive jobs' beats follow with no gap.
    o_req : Out(stream {addr: 32})
        Aligned read requests. Backpressure holds the walker.
    o_beat : Out(stream {place, meta}), always ready
        The placement and meta of the request issued in this cycle (valid = request taken).
    o_almost_idle : Out(1)
        At most one request of the walker's jobs is left after this cycle (none pending in
        `i_job`): a job offered in the next cycle issues right after them, with no gap.

    Latency: a job taken in cycle t (walker idle) requests its first beat in cycle t + 1.
    """

    def __init__(self, *, bus_bytes: int, row_bytes: int, cnt_width: int, length_width: int,
                 row_width: int) -> None:
        self.bus_bytes, self.row_bytes = bus_bytes, row_bytes
        self.widths = (cnt_width, length_width, row_width)
        super().__init__({
            "i_job": In(stream.Signature(job_layout(*self.widths))),
            "o_req": Out(stream.Signature(data.StructLayout({"addr": 32}))),
            "o_beat": Out(stream.Signature(data.StructLayout({
                "place": placement_layout(bus_bytes, row_bytes),
                "meta": meta_layout(row_width),
            }), always_ready=True)),
            "o_almost_idle": Out(1),
        })

    def _next(self, m: Module, pos: data.View, k: data.View) -> Step:
        """Return the step from `pos`: the segment starting there, the position after it, and
        whether it ends the row and is the instruction's last single-beat segment.

        Every candidate of the segment's length is compared with the elements left in the row
        (`rest`) at once, beside the beat counts of both outcomes, so that `ends_row` only
        selects among results: it is the last level before the registers.
        """
        _cnt_width, length_width, _row_width = self.widths
        shift = (self.bus_bytes - 1).bit_length()
        rest = pos.rest
        last_j = pos.j_left == 1
        span_wrap = ~k.cond_c & k.cond_j & last_j
        to_jwrap = (k.cond_c & ~k.cond_j) | (~k.cond_c & ~k.cond_j & last_j)
        span = pos.to_cwrap + k.run_sat
        length = Signal(length_width)  # a segment holds at most a row's elements
        with m.If(k.cond_c & k.cond_j):
            m.d.comb += length.eq(rest)
        with m.Elif(k.cond_c):
            m.d.comb += length.eq(pos.jrun)
        with m.Elif(span_wrap):
            m.d.comb += length.eq(span)
        with m.Else():
            m.d.comb += length.eq(pos.to_cwrap)
        ends_row = Signal()
        m.d.comb += ends_row.eq(Mux(k.cond_c, k.cond_j | at_most(rest, pos.jrun),
                                    Mux(span_wrap, at_most(rest, span),
                                        at_most(rest, pos.to_cwrap))))
        # The beat count needs only the address's offset in its bus word (the segment lies in
        # the 32-bit address space, so address + nbytes - 1 does not wrap): a narrow adder,
        # not two chained 32-bit ones after the length; one for each outcome of `ends_row`.
        in_word = (pos.row_base[:shift] + pos.off[:shift])[:shift]
        lo = pos.done << k.ob_shift
        bytes_rest, bytes_part = rest << k.ob_shift, length[:length_width] << k.ob_shift
        rest_beats = (in_word + bytes_rest - 1) >> shift
        beats_rest = Signal(rest_beats.shape(), name="beats_rest")
        m.d.comb += beats_rest.eq(rest_beats)
        segment = {
            "beat": (pos.row_base + pos.off)[shift:32],
            "beats_left": Mux(ends_row, beats_rest, (in_word + bytes_part - 1) >> shift),
            "sel": self.row_bytes - lo + in_word,
            "lo": lo,
            "hi": Mux(ends_row, lo + bytes_rest, lo + bytes_part),
        }
        last_row = pos.rows_left == 1
        return Step(segment, self._after(m, pos, k, ends_row, length, span_wrap, to_jwrap),
                    ends_row, ends_row & last_row,
                    ends_row & last_row & (beats_rest == 0))

    def _after(self, m: Module, pos: data.View, k: data.View, ends_row: Value, length: Value,
               span_wrap: Value, to_jwrap: Value) -> data.View:
        """Return the position after the segment of `length` elements starting at `pos` (the
        rest of the row when `ends_row`)."""
        _cnt_width, length_width, _row_width = self.widths
        after = Signal(position_layout(*self.widths))
        m.d.comb += after.eq(pos)
        next_i = (pos.base_i + k.stride_outer)[:32]
        with m.If(ends_row):
            wrap = pos.r0 + 1 == k.n0
            next_r1 = (pos.r1_base + k.stride1)[:32]
            m.d.comb += [
                after.off.eq(k.off0), after.base_i.eq(k.base_i0), after.base_j.eq(k.base_j0),
                after.j_left.eq(k.j_left0), after.to_cwrap.eq(k.to_cwrap0), after.done.eq(0),
                after.rest.eq(k.length), after.jrun.eq(k.jrun0),
                after.rows_left.eq(pos.rows_left - 1), after.row.eq(pos.row + 1),
                after.r0.eq(Mux(wrap, 0, pos.r0 + 1)),
                after.r1_base.eq(Mux(wrap, next_r1, pos.r1_base)),
                after.row_base.eq(Mux(wrap, next_r1, pos.row_base + k.stride0)),
            ]
        with m.Else():
            elements = length[:length_width]
            m.d.comb += [after.done.eq(pos.done + elements), after.rest.eq(pos.rest - elements),
                         after.to_cwrap.eq(k.run_sat)]
            with m.If(span_wrap):
                m.d.comb += [
                    after.base_i.eq(next_i), after.base_j.eq(next_i + k.stride_mid),
                    after.off.eq(next_i + k.stride_mid), after.j_left.eq(k.n_mid_sat - 1),
                ]
            with m.Elif(to_jwrap):
                m.d.comb += [
                    after.base_i.eq(next_i), after.base_j.eq(next_i), after.off.eq(next_i),
                    after.j_left.eq(k.n_mid_sat), after.jrun.eq(k.jgroup),
                ]
            with m.Else():
                next_j = (pos.base_j + k.stride_mid)[:32]
                m.d.comb += [
                    after.base_j.eq(next_j), after.off.eq(next_j), after.j_left.eq(pos.j_left - 1),
                ]
        return after

    def _chosen(self, m: Module, more: Value, going: Step, starting: Step) -> Step:
        """Return `going` (the active job's next step) when `more`, else `starting` (the
        offered job's first), each field through one mux."""
        segment = {name: Mux(more, value, starting.segment[name])
                   for name, value in going.segment.items()}
        after = Signal.like(going.after, name="after")
        flags = Signal(2, name="step_flags")
        m.d.comb += [
            after.eq(Mux(more, going.after, starting.after)),
            flags.eq(Mux(more, Cat(going.ends_row, going.last),
                         Cat(starting.ends_row, starting.last))),
        ]
        return Step(segment, after, flags[0], flags[1],
                    Mux(more, going.single_last, starting.single_last))

    def elaborate(self, platform: object) -> Module:
        """Build the job registers, the segment steps and the beat counter."""
        m = Module()
        _cnt_width, _length_width, row_width = self.widths
        job = self.i_job.payload
        consts = Signal(consts_layout(*self.widths))
        pos = Signal(position_layout(*self.widths))
        more = Signal()  # the active job has segments left after the current one

        seg_valid = Signal()
        beat = Signal(32)
        # A segment lies within one row: at most (bus_bytes - 1 + row_bytes - 1) // bus_bytes
        # beats after its first, so the counter and its end tests are narrow.
        beats_left = Signal(range((self.bus_bytes + self.row_bytes - 2) // self.bus_bytes + 1))
        place = Signal(placement_layout(self.bus_bytes, self.row_bytes))
        seg_last_row = Signal()
        meta = Signal(meta_layout(row_width))

        issue = self.o_req.valid & self.o_req.ready
        final_beat = beats_left == 0
        need = ~seg_valid | (issue & final_beat)
        starting = need & ~more & self.i_job.valid
        m.d.comb += self.i_job.ready.eq(need & ~more)

        # Two steps side by side: the active job's next segment from the registered position,
        # and the offered job's first from the job (what it computes is only kept when a job
        # starts); `more`, a register, picks one at their ends, so it is off their paths.
        going = self._next(m, pos, consts)
        step = self._chosen(m, more, going, self._next(m, job.start, job.consts))
        src_k = Signal.like(consts)
        m.d.comb += src_k.eq(Mux(more, consts, job.consts))

        with m.If(issue):
            m.d.sync += [beat.eq(beat + 1), beats_left.eq(beats_left - 1),
                         place.sel.eq(place.sel - self.bus_bytes)]
        with m.If(need):
            m.d.sync += seg_valid.eq(0)
            with m.If(more | self.i_job.valid):
                segment = step.segment
                m.d.sync += [
                    seg_valid.eq(1), beat.eq(segment["beat"]),
                    beats_left.eq(segment["beats_left"]),
                    place.sel.eq(segment["sel"]), place.lo.eq(segment["lo"]),
                    place.hi.eq(segment["hi"]), place.flip.eq(src_k.flip),
                    seg_last_row.eq(step.ends_row),
                    meta.row.eq(Mux(more, pos.row, job.start.row)), meta.mem.eq(src_k.mem), meta.tag.eq(src_k.tag),
                    meta.last.eq(step.last),
                    pos.eq(step.after), more.eq(~step.last),
                ]
            with m.If(starting):
                m.d.sync += consts.eq(job.consts)

        # Ready for the next job: from the active job's own step only (`going`), never the
        # offered job's, whose `valid` already holds the answer low.
        m.d.comb += self.o_almost_idle.eq(~self.i_job.valid & Mux(
            more,
            need & going.single_last,
            ~seg_valid | final_beat | ((beats_left == 1) & issue),
        ))

        shift = (self.bus_bytes - 1).bit_length()
        beat_out = self.o_beat.payload
        m.d.comb += [
            self.o_req.valid.eq(seg_valid),
            self.o_req.payload.addr.eq(beat << shift),
            self.o_beat.valid.eq(issue),
            beat_out.place.eq(place),
            beat_out.place.last.eq(seg_last_row & final_beat),
            beat_out.meta.eq(meta),
            beat_out.meta.last.eq(meta.last & final_beat),
        ]
        return m
