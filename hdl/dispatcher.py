"""The dispatcher: program-order dispatch into per-unit queues, issue gated by range hazards."""

from amaranth.hdl import Array, Cat, Module, Shape, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from systolic.hdl.range_overlap import (
    compact_conflict_terms,
    compact_footprint,
    compact_layout,
    footprint_conflict_terms,
    footprint_layout,
)

__all__ = ["Dispatcher"]


def _index_shape(count: int) -> Shape:
    return unsigned(max(1, (count - 1).bit_length()))


def _check_count(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer of at least {minimum}, not {value!r}")


class Dispatcher(wiring.Component):
    """Dispatch instructions in program order; issue each once the older ones it conflicts with end.

    Every instruction names its unit and carries a footprint of `ranges` memory ranges. It is
    accepted into a free entry of the in-flight table and into its unit's queue. At acceptance it
    records, as a bitmask over table entries (Gemmini's ROB approach), every in-flight
    instruction of *another* unit whose footprint conflicts with its own (same memory,
    overlapping inclusive [first, last], at least one of the two a write:
    `range_overlap.footprints_conflict`). Completions clear their bit in every mask; the head
    of a unit's queue is offered on `o_issue[u]` when its mask is zero. Instructions of the
    same unit are never checked against each other: a unit executes its queue in order and its
    own pipeline keeps same-unit accesses ordered.

    Parameters
    ----------
    units : int
        Number of units (LD = 0, EX = 1, ST = 2 for the accelerator), at least 1.
    table_entries : int
        In-flight table entries: instructions accepted and not yet completed, at least 1.
    queue_depth : int
        Per-unit queue entries: instructions accepted and not yet issued, at least 1.
    ranges : int
        Ranges per footprint, at least 1.
    addr_width : int
        Width of `first` and `last`, at least 1.
    onchip_width : int or None
        None (default): ranges are compared at full width. An integer from 1 to `addr_width`:
        the table keeps footprints compact (`range_overlap.compact_layout`): on-chip ranges
        with their `onchip_width` low address bits, the external range apart at full width.
        The instructions must then satisfy `range_overlap.compact_contract_holds` (at most one
        external range; on-chip rows below 2**onchip_width), as every instruction's footprint
        does for `range_overlap.onchip_addr_width(config)`; hazards are then the same.
    payload_shape : shape-castable
        The instruction word, passed through to the unit unchanged.

    Members
    -------
    i_instr : ``In(stream.Signature(StructLayout({"unit": unit_shape, "ranges":
    footprint_layout(ranges, addr_width), "payload": payload_shape})))``
        Instructions in program order. `unit` must be below `units` (another value is never
        accepted). Unused ranges have `valid` 0.
    o_issue : ``Out(stream.Signature(StructLayout({"payload": payload_shape, "tag":
    tag_shape}))).array(units)``
        Per unit, its instructions in program order with their table entry index `tag`.
    i_complete : ``In(stream.Signature(tag_shape)).array(units)``
        Per unit, the tag of an issued instruction that has finished (each tag exactly once).
        `ready` is always 1 (a stream rather than `always_ready`, which Verilog ports cannot
        carry as a constant).
    idle : ``Out(1)``
        The table is empty: every accepted instruction has completed.

    Latency, throughput and backpressure
    ------------------------------------
    All cycles are transfer cycles. An instruction accepted in cycle t occupies a table entry and
    a queue slot from cycle t + 1 and can be issued in cycle t + 3 at the earliest (its hazards
    are compared in cycle t + 1 and recorded in t + 2). It is offered in cycle s > t + 2 when it
    heads its queue (its same-unit predecessor was issued before s) and every recorded
    instruction's completion was transferred before s; so a completion in cycle c lets a dependant issue in cycle c + 1, and
    an instruction accepted in the same cycle as the completion of an instruction it conflicts
    with does not wait for it. A completion in cycle c frees the entry for an acceptance in
    cycle c + 1; an issue in cycle s frees the queue slot for an acceptance in cycle s + 1. At
    most one acceptance per cycle and one issue per unit per cycle. `i_instr.ready` is high
    when, at the start of the cycle, the table has a free entry and the queue of
    `i_instr.payload.unit` has a free slot; it depends combinationally on that field only.
    `o_issue[u].valid` and `idle` come from registers (through muxes); `i_complete` is always
    ready. Free entries are allocated lowest index first.
    `o_issue[u].payload` shows the head of u's queue from the first cycle it heads the queue,
    whatever `valid` (the LOAD unit relies on it: `systolic.hdl.load_unit`, input contract).

    Cost (N entries, R ranges, A = addr_width, W = onchip_width or A)
    ----------------------------------------------------------------
    Registers: N * (2 + unit bits + R * (2W + 5) + N) for the table (compact: 2A + 2 more per
    entry), plus per unit one SyncFIFO of queue_depth x payload bits and a shift register
    of queue_depth tags (the head's in slot 0). Logic: N * R * R
    range comparisons (2 W-bit magnitude comparators each; compact: N more of 2 A-bit ones
    for the external ranges). The hazards of an instruction are compared in the cycle after
    its acceptance, from a register copy of it (`fresh`), against the entries then valid
    (the same set acceptance saw, without those completing in the acceptance cycle); each
    range pair's result is registered (`hits`: N * R * R flip-flops, compact N more), ORed in the next
    cycle and recorded in its mask; each mask has one more bit, `pending`, set from the
    entry's allocation until then. Longest paths: `fresh` footprint -> comparator -> `hits`
    register; `hits` -> OR of R * R (+ 1) terms -> mask register; mask register ->
    (N + 1)-input NOR -> N:1 mux by the queue head's tag (a register, not
    the FIFO's read port) -> `o_issue[u].valid`;
    `i_instr.unit` -> queue full -> `i_instr.ready` -> the allocated entry's `valid` and
    `pending` bits (a free entry's footprint and unit registers load every cycle, so the
    acceptance does not enable them).
    """

    def __init__(self, *, units: int = 3, table_entries: int = 16, queue_depth: int = 4,
                 ranges: int = 3, addr_width: int = 32, onchip_width: int | None = None,
                 payload_shape):
        _check_count("units", units, 1)
        _check_count("table_entries", table_entries, 1)
        _check_count("queue_depth", queue_depth, 1)
        _check_count("ranges", ranges, 1)
        _check_count("addr_width", addr_width, 1)
        if onchip_width is not None:
            _check_count("onchip_width", onchip_width, 1)
            if onchip_width > addr_width:
                raise ValueError(f"onchip_width must be at most addr_width ({addr_width}), "
                                 f"not {onchip_width}")
        try:
            Shape.cast(payload_shape)
        except TypeError:
            raise ValueError(
                f"payload_shape must be a shape (a width or a layout), not {payload_shape!r}"
            ) from None
        self._units = units
        self._table_entries = table_entries
        self._queue_depth = queue_depth
        self._ranges = ranges
        self._addr_width = addr_width
        self.tag_shape = _index_shape(table_entries)
        self.footprint_layout = footprint_layout(ranges, addr_width)
        self._onchip_width = onchip_width
        self.entry_layout = (self.footprint_layout if onchip_width is None
                             else compact_layout(ranges, onchip_width, addr_width))
        self.instr_layout = data.StructLayout({
            "unit": _index_shape(units),
            "ranges": self.footprint_layout,
            "payload": payload_shape,
        })
        self.issue_layout = data.StructLayout({"payload": payload_shape, "tag": self.tag_shape})
        super().__init__({
            "i_instr": In(stream.Signature(self.instr_layout)),
            "o_issue": Out(stream.Signature(self.issue_layout)).array(units),
            "i_complete": In(stream.Signature(self.tag_shape)).array(units),
            "idle": Out(1),
        })

    @property
    def units(self) -> int:
        return self._units

    @property
    def table_entries(self) -> int:
        return self._table_entries

    @property
    def queue_depth(self) -> int:
        return self._queue_depth

    def _hazards(self, m, accept, alloc, unit, ranges, terms, staying, entry_unit,
                 entry_ranges):
        """Compute the hazards of the instruction accepted (`accept`) in cycle t into entry
        `alloc` in two register stages; return (waits, tag, done): in cycle t + 2, `done` is
        high, `tag` is its entry and `waits` (combinational) its mask over the entries.

        Cycle t + 1 compares the registered copy of the instruction (`fresh`) with every entry
        in flight then and not completing then (`staying`, the set acceptance saw, without the
        completions of cycle t) and registers each range pair's conflict (`terms`) and whether
        the entry may conflict at all (in flight, another unit): the comparators run from
        registers to registers. Cycle t + 2 ORs them into `waits`.
        """
        n = self._table_entries
        fresh_valid = Signal()
        fresh_tag = Signal(self.tag_shape)
        fresh_unit = Signal.like(unit)
        fresh_ranges = Signal(self.entry_layout, name="fresh_ranges")
        # The copy is taken every cycle (used only after an acceptance): no enable from `accept`.
        m.d.sync += [fresh_valid.eq(accept), fresh_tag.eq(alloc), fresh_unit.eq(unit),
                     fresh_ranges.eq(ranges)]

        done = Signal()
        tag = Signal(self.tag_shape, name="hazard_tag")
        candidates = Signal(n)
        m.d.sync += [done.eq(fresh_valid), tag.eq(fresh_tag)]
        waits = Signal(n)
        for e in range(n):
            pair_terms = terms(fresh_ranges, entry_ranges[e])
            hits = Signal(len(pair_terms), name=f"hits{e}")
            m.d.sync += [
                hits.eq(Cat(*pair_terms)),
                candidates[e].eq(staying[e] & (entry_unit[e] != fresh_unit)),
            ]
            m.d.comb += waits[e].eq(candidates[e] & hits.any())
        return waits, tag, done

    def elaborate(self, platform):
        m = Module()
        n = self._table_entries
        new = self.i_instr.payload

        valid = Signal(n)
        entry_unit = [Signal(self.instr_layout["unit"].shape, name=f"unit{e}") for e in range(n)]
        entry_ranges = [Signal(self.entry_layout, name=f"ranges{e}") for e in range(n)]
        entry_waits = [Signal(n + 1, name=f"waits{e}") for e in range(n)]

        # Entries whose completion is transferred this cycle.
        completing = Signal(n)
        for e in range(n):
            m.d.comb += completing[e].eq(
                Cat(c.valid & (c.payload == e) for c in self.i_complete).any()
            )

        # The lowest free entry.
        alloc = Signal(self.tag_shape)
        for e in reversed(range(n)):
            with m.If(~valid[e]):
                m.d.comb += alloc.eq(e)

        queues = []
        for u in range(self._units):
            queue = SyncFIFO(width=Shape.cast(self.issue_layout["payload"].shape).width,
                             depth=self._queue_depth)
            m.submodules[f"queue{u}"] = queue
            queues.append(queue)

        queue_ready = Signal()
        for u, queue in enumerate(queues):
            with m.If(new.unit == u):
                m.d.comb += queue_ready.eq(queue.w_rdy)
        accept = Signal()
        m.d.comb += [
            self.i_instr.ready.eq(~valid.all() & queue_ready),
            accept.eq(self.i_instr.valid & self.i_instr.ready),
            self.idle.eq(~valid.any()),
        ]
        for complete in self.i_complete:
            m.d.comb += complete.ready.eq(1)

        if self._onchip_width is None:
            new_ranges, terms = new.ranges, footprint_conflict_terms
        else:
            new_ranges, terms = (Signal(self.entry_layout, name="new_ranges"),
                                 compact_conflict_terms)
            compact_footprint(m, new.ranges, new_ranges)

        allocated = Signal(n)
        m.d.comb += allocated.eq(accept << alloc)
        m.d.sync += valid.eq((valid & ~completing) | allocated)

        fresh_waits, fresh_tag, fresh_done = self._hazards(
            m, accept, alloc, new.unit, new_ranges, terms,
            valid & ~completing, entry_unit, entry_ranges)
        pending = 1 << n
        keep = Cat(~completing, 1)  # clears completed entries' bits, keeps `pending`
        for e in range(n):
            # A free entry takes the offered footprint every cycle (nothing reads a free
            # entry's), so it holds the instruction's from its allocation on: the wide
            # registers' enable is `valid[e]`, a register, not the acceptance.
            with m.If(~valid[e]):
                m.d.sync += [entry_unit[e].eq(new.unit), entry_ranges[e].eq(new_ranges)]
            with m.If(allocated[e]):
                m.d.sync += entry_waits[e].eq(pending)
            with m.Elif(fresh_done & (fresh_tag == e)):
                m.d.sync += entry_waits[e].eq(fresh_waits & ~completing)
            with m.Else():
                m.d.sync += entry_waits[e].eq(entry_waits[e] & keep)

        entry_free_to_go = Array(Signal(name=f"go{e}") for e in range(n))
        for e in range(n):
            m.d.comb += entry_free_to_go[e].eq(entry_waits[e] == 0)

        for u, queue in enumerate(queues):
            issue = self.o_issue[u]
            push = accept & (new.unit == u)
            head_tag, queued = self._queued_tags(m, u, push, alloc, issue.valid & issue.ready)
            m.d.comb += [
                queue.w_data.eq(new.payload),
                queue.w_en.eq(push),
                issue.payload.payload.eq(queue.r_data),
                issue.payload.tag.eq(head_tag),
                issue.valid.eq(queued & entry_free_to_go[head_tag]),
                queue.r_en.eq(issue.valid & issue.ready),
            ]
        return m

    def _queued_tags(self, m, unit, push, tag, pop):
        """Keep the tags of queue `unit`'s instructions in registers, its head in slot 0; return
        (the head's tag, a register: whether a tag is queued).

        The queue's payloads stay in its FIFO; the tags live beside it in a shift register so
        that the issue decision starts at registers (the head's tag selecting its entry's
        mask-clear bit), not at the FIFO's read pointer and memory. A `push` (of entry `tag`)
        is written in the next cycle from registered copies (the acceptance's priority encoder
        ends at a register), so a tag is queued from the second cycle after its acceptance,
        before its mask is recorded (the third): the issue cycles are unchanged, and the FIFO
        holds at least the queued tags' payloads. `pop` shifts the head out.
        """
        slots = [Signal(self.tag_shape, name=f"queue{unit}_tag{s}")
                 for s in range(self._queue_depth)]
        pushed, pushed_tag = Signal(name=f"queue{unit}_pushed"), Signal(self.tag_shape)
        level = Signal(range(self._queue_depth + 1), name=f"queue{unit}_tags")
        m.d.sync += [pushed.eq(push), pushed_tag.eq(tag), level.eq(level + pushed - pop)]
        behind = Signal.like(level, name=f"queue{unit}_behind")
        m.d.comb += behind.eq(level - pop)
        for s, (slot, next_slot) in enumerate(zip(slots, [*slots[1:], None])):
            with m.If(pushed & (behind == s)):
                m.d.sync += slot.eq(pushed_tag)
            if next_slot is not None:
                with m.Elif(pop):
                    m.d.sync += slot.eq(next_slot)
        return slots[0], level != 0
