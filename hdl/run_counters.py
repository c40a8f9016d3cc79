"""`RunCounters`: the accelerator's performance counters (cycles, retirements, stalls)."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RunCounters"]


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
            with m.If(self.i_clear):
                m.d.sync += counter.eq(0)
            with m.Elif(self.i_enable):
                m.d.sync += counter.eq(counter + increment)
        return m
