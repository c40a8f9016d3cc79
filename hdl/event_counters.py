"""`EventCounters`: the accelerator's energy event counters (docs/energy.md, "RTL counters").

Each counter sums, while the accelerator is busy, the per-cycle increment of one event (a
strobe, or a count such as the `rows·cols` slots of one array beat). The names are the model's
(`systolic.sim.energy.events.EVENTS`); `RTL_EVENTS` lists every one of them, in the order of
the accelerator's ports.
"""

from collections.abc import Mapping

from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig
from systolic.hdl.run_counters import count

__all__ = ["EVENT_WIDTH", "RTL_EVENTS", "EventCounters", "event_increments", "events_signature"]

EVENT_WIDTH = 48
"""Bits of each event counter (2^48 events: days of a large array at hundreds of MHz)."""

RTL_EVENTS = (
    "mac_slots", "macs",
    "spad_in_reads", "spad_in_writes", "spad_wt_reads", "spad_wt_writes",
    "params_reads", "params_writes", "acc_reads", "acc_writes", "acc_rmw",
    "ext_read_beats", "ext_read_bytes", "ext_write_beats", "ext_write_bytes",
    "output_stage_lanes", "vector_lanes", "vector_mul_lanes", "lut_lookups", "lut_writes",
)  # fmt: skip
"""The events the accelerator counts in the RTL (its `events` ports), in report order: every
event of the model."""


def event_increments(config: ArrayConfig) -> dict[str, int]:
    """Return, per event of `RTL_EVENTS`, the largest increment in one cycle on `config`.

    `spad_in_reads` may count an EXECUTE and a STORE-unit read in the same cycle (2); a beat of
    the array counts `rows·cols` slots and at most as many products; an external beat carries
    at most `bus_bytes` bytes; the STORE unit's lane events count up to `cols` (output stage)
    or `dim` lanes; every other event is a one-bit strobe."""
    increments = dict.fromkeys(RTL_EVENTS, 1)
    increments.update({
        "mac_slots": config.pes, "macs": config.pes, "spad_in_reads": 2,
        "ext_read_bytes": config.bus_bytes, "ext_write_bytes": config.bus_bytes,
        "output_stage_lanes": config.cols, "vector_lanes": config.dim,
        "vector_mul_lanes": config.dim, "lut_lookups": config.dim, "lut_writes": config.dim,
    })
    return increments


def events_signature(names: tuple[str, ...], width: int = EVENT_WIDTH) -> wiring.Signature:
    """Return the signature of the counter outputs: one `Out(width)` member per event name."""
    return wiring.Signature({name: Out(width) for name in names})


class EventCounters(wiring.Component):
    """Sum per-cycle event increments while `i_enable` is high; `i_clear` zeroes every counter.

    The contract of `RunCounters` (`systolic.hdl.run_counters`): cleared by the accelerator's
    `start`, counting while it is `busy`, registered outputs.

    Members
    -------
    i_clear : ``In(1)``
        Zero every counter at the end of this cycle (it wins over counting).
    i_enable : ``In(1)``
        Count this cycle's increments.
    i_inc : ``In(StructLayout({name: range(max + 1)}))``
        This cycle's increment of each event (`increments` gives each one's largest value).
    counts : ``Out(events_signature(names, width))``
        The sums, `width` bits each (they wrap after 2^width).

    Cost: one `width`-bit adder and register per event.
    """

    def __init__(self, increments: Mapping[str, int], *, width: int = EVENT_WIDTH) -> None:
        if not increments or min(increments.values()) < 1:
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"increments must name events with positive maxima, not "
                             f"{dict(increments)!r}")
        self.names = tuple(increments)
        layout = data.StructLayout({name: range(top + 1) for name, top in increments.items()})
        super().__init__({
            "i_clear": In(1),
            "i_enable": In(1),
            "i_inc": In(layout),
            "counts": Out(events_signature(self.names, width)),
        })

    def elaborate(self, platform):
        m = Module()
        for name in self.names:
            count(m, getattr(self.counts, name), self.i_clear, self.i_enable,
                  getattr(self.i_inc, name))
        return m
