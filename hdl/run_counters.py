"""`RunCounters`: the accelerator's performance counters (cycles, retirements, stalls)."""

from amaranth.hdl import Module, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RunCounters", "count"]


def count(m: Module, counter: Value, clear: Value, enable: Value, increment: Value | int) -> None:
    """Add to `m`: `counter` zeroed when `clear`, else increased by `increment` when `enable`.

    A one-bit increment (a strobe) is the counter's enable and the incrementer adds the
    constant 1, so a late strobe (e.g. a unit's issue handshake) ends at the flip-flops'
    enable instead of entering the counter's carry chain at its lowest bit."""
    with m.If(clear):
        m.d.sync += counter.eq(0)
    if isinstance(increment, Value) and len(increment) == 1:
        with m.Elif(enable & increment):
            m.d.sync += counter.eq(counter + 1)
    else:
        with m.Elif(enable):
            m.d.sync += counter.eq(counter + increment)


class RunCounters(wiring.Component):
    """Count events while `i_enable` is high; `i_clear` zeroes every counter.

    Members
    -------
    i_clear : ``In(1)``
        Zero every counter at the end of this cycle (it wins over counting).
    i_enable : ``In(1)``
        Count this cycle's events (the accelerator's `busy`).
    i_retired : ``In(range(units + 2))``
        Instructions retired in this cycle.
    i_unit_busy, i_hazard_stall : ``In(1).array(units)``
        Per unit: it has an instruction in progress / its queue head waits on a hazard.
    i_dispatch_stall : ``In(1)``
        A valid command was refused because the table or its queue was full.
    cycles, instructions, dispatch_stall : ``Out(width)``
    unit_busy, hazard_stall : ``Out(width).array(units)``
        The counts, updated at the end of each cycle (registered outputs).

    Cost: (3 + 2·units) `width`-bit incrementers and registers.
    """

    def __init__(self, *, units: int = 3, width: int = 64) -> None:
        super().__init__({
            "i_clear": In(1),
            "i_enable": In(1),
            "i_retired": In(range(units + 2)),
            "i_unit_busy": In(1).array(units),
            "i_hazard_stall": In(1).array(units),
            "i_dispatch_stall": In(1),
            "cycles": Out(width),
            "instructions": Out(width),
            "dispatch_stall": Out(width),
            "unit_busy": Out(width).array(units),
            "hazard_stall": Out(width).array(units),
        })

    def elaborate(self, platform):
        m = Module()
        pairs = [
            (self.cycles, 1),
            (self.instructions, self.i_retired),
            (self.dispatch_stall, self.i_dispatch_stall),
            *zip(self.unit_busy, self.i_unit_busy),
            *zip(self.hazard_stall, self.i_hazard_stall),
        ]
        for counter, increment in pairs:
            count(m, counter, self.i_clear, self.i_enable, increment)
        return m
