"""`CompletionMerge`: two completion strobes of one unit onto one completion port, none lost."""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.execute_ports import done_layout

__all__ = ["CompletionMerge"]


class CompletionMerge(wiring.Component):
    """Merge strobes `i_first` and `i_second` into `o_done`, at most one per cycle, in order.

    The EXECUTE unit reports PRELOAD and COMPUTE completions on two strobes that may fire in
    the same cycle, while the dispatcher takes one completion per unit and cycle. Strobes are
    delivered in the order they fired; of two in the same cycle `i_first` goes first.

    Timing (exact): with no backlog a strobe is delivered combinationally in its own cycle
    (zero latency). In general the k-th strobe (in that order), fired in cycle t_k, is delivered
    in cycle d_k = max(t_k, d_{k-1} + 1). In the accelerator `i_first` is COMPUTE, which is
    always the older instruction when both fire together: a COMPUTE issued after a PRELOAD needs
    that PRELOAD's weights in the array before its first row enters, and then takes
    `rows + cols - 1` more cycles. So the rule is "in order of completion, program order on a
    tie, one per cycle" (the dispatch model's `UnitModel` rule with the strobe cycle as the
    unit's latency).

    Parameters
    ----------
    depth : int
        Backlog entries. With the backlog holding only tags of distinct in-flight instructions,
        `depth` = the number of in-flight table entries can never overflow.
    tag_width : int

    Members
    -------
    i_first, i_second : ``In(done_layout(tag_width))``
        Strobes {valid, tag}.
    o_done : ``Out(done_layout(tag_width))``
        Merged strobe {valid, tag}: never backpressured.

    Cost: `depth` x `tag_width` register bits, two pointers and a counter, an `depth`:1 mux.
    """

    def __init__(self, *, depth: int = 16, tag_width: int = 4) -> None:
        if not isinstance(depth, int) or depth < 2 or depth & (depth - 1):
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"depth must be a power of two of at least 2, not {depth!r}")
        self._depth = depth
        super().__init__({
            "i_first": In(done_layout(tag_width)),
            "i_second": In(done_layout(tag_width)),
            "o_done": Out(done_layout(tag_width)),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self._depth
        ptr_width = (depth - 1).bit_length()
        a, b = self.i_first, self.i_second
        tag_shape = a.tag.shape()
        entries = Array(Signal(tag_shape, name=f"backlog{e}") for e in range(depth))
        read = Signal(ptr_width)
        write = Signal(ptr_width)
        count = Signal(range(depth + 1))
        empty = Signal()
        m.d.comb += empty.eq(count == 0)

        # Output: the backlog's head, or (no backlog) the first strobe of this cycle.
        m.d.comb += [
            self.o_done.valid.eq(~empty | a.valid | b.valid),
            self.o_done.tag.eq(Mux(~empty, entries[read], Mux(a.valid, a.tag, b.tag))),
        ]
        # What enters the backlog: every strobe of this cycle not delivered now, in order.
        push0 = Signal()
        push1 = Signal()
        tag0 = Signal(tag_shape)
        m.d.comb += [
            push0.eq(Mux(empty, a.valid & b.valid, a.valid | b.valid)),
            push1.eq(~empty & a.valid & b.valid),
            tag0.eq(Mux(empty | ~a.valid, b.tag, a.tag)),
        ]
        with m.If(push0):
            m.d.sync += entries[write].eq(tag0)
        with m.If(push1):
            m.d.sync += entries[(write + 1)[:ptr_width]].eq(b.tag)
        pop = Signal()
        m.d.comb += pop.eq(~empty)
        m.d.sync += [
            write.eq(write + push0 + push1),
            read.eq(read + pop),
            count.eq(count + push0 + push1 - pop),
        ]
        return m
