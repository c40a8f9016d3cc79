"""`EntryTracker`: which in-flight table entry the dispatcher gives the next instruction."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.execute_ports import done_layout

__all__ = ["EntryTracker"]


class EntryTracker(wiring.Component):
    """Mirror the dispatcher's table occupancy to name the entry of each accepted instruction.

    The dispatcher allocates the lowest free entry on acceptance and frees an entry in the cycle
    after its completion is transferred (`hdl/dispatcher.py`). This component keeps the same
    `valid` bits from the same events, so `o_alloc` equals the tag the dispatcher gives an
    instruction it accepts in this cycle. The accelerator uses it for its trace port only.

    Members
    -------
    i_accept : ``In(1)``
        The dispatcher accepts an instruction in this cycle.
    i_complete : ``In(done_layout(tag_width)).array(units)``
        Completions transferred to the dispatcher in this cycle.
    o_alloc : ``Out(tag_width)``
        The lowest free entry (the tag of an instruction accepted in this cycle).

    Cost: `entries` flip-flops, a priority encoder and `units` tag decoders (combinational).
    """

    def __init__(self, *, entries: int = 16, units: int = 3, tag_width: int = 4) -> None:
        if not isinstance(entries, int) or not 1 <= entries <= 1 << tag_width:
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"entries must be from 1 to {1 << tag_width}, not {entries!r}")
        self._entries = entries
        super().__init__({
            "i_accept": In(1),
            "i_complete": In(done_layout(tag_width)).array(units),
            "o_alloc": Out(tag_width),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._entries
        valid = Signal(n)
        completing = Signal(n)
        for e in range(n):
            m.d.comb += completing[e].eq(
                Cat(c.valid & (c.tag == e) for c in self.i_complete).any())
        for e in reversed(range(n)):
            with m.If(~valid[e]):
                m.d.comb += self.o_alloc.eq(e)
        m.d.sync += valid.eq((valid & ~completing) | (self.i_accept << self.o_alloc))
        return m
