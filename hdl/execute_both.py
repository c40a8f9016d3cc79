"""Both dataflows in one EXECUTE unit: PRELOAD/COMPUTE and COMPUTE.OS on one shared array.

The array (`SystolicArray` of `Dataflow.BOTH`: one mesh of `BothPE`s) runs one dataflow at a
time, the unit's *mode* (weight-stationary after reset). The weight-stationary sequencer
(`ExecuteUnit._elaborate_ws`) and the output-stationary one (`execute_os.elaborate_os`) are
both present, each written against its own view of the unit's and the array's ports; the
mode selects which view drives the scratchpad read ports, the array's inputs, the
accumulator stream and the event strobes.

An instruction of the current mode's family is taken exactly as in a single-dataflow unit.
One of the other family is taken only once the current sequencer is idle: nothing issued,
streamed or in the array (its last result taken by the accumulator); the mode changes in the
cycle it is taken, so the array never holds a beat of the other dataflow. The weight-
stationary state (active and shadow weights, the open tile) is kept while the array runs
COMPUTE.OS, as the ISA says. Exact cycles: `systolic.sim.timing.execute_timing` ("Both
dataflows").
"""

from collections.abc import Callable
from typing import Any

from amaranth import Module, Mux, Signal, Value
from amaranth.lib import wiring

from systolic.hdl.execute_os import elaborate_os
from systolic.isa.instructions import ComputeOS

__all__ = ["elaborate_both"]


class _View:
    """Fresh signals shaped as a component's ports (`signature.create()`), for one half of the
    unit, with the unit's `config` and `tag_width`."""

    def __init__(self, component: wiring.Component, name: str) -> None:
        interface = component.signature.create(path=(name,))
        for member in component.signature.members:
            setattr(self, member, getattr(interface, member))
        self.config = getattr(component, "config", None)
        self.tag_width = getattr(component, "tag_width", None)

    def __getattr__(self, name: str) -> Any:  # (the ports, set in __init__)
        raise AttributeError(f"{type(self).__name__} has no port {name!r}")


def elaborate_both(m: Module, unit, array, elaborate_ws: Callable[..., Value]) -> None:
    """Write both sequencers of `unit` (an `ExecuteUnit` of `Dataflow.BOTH`) and the mode
    that chooses between them into `m`; `elaborate_ws(m, array, ports)` writes the
    weight-stationary one and returns its idle signal."""
    ws, os = _View(unit, "ws"), _View(unit, "os")
    ws_array, os_array = _View(array, "ws_array"), _View(array, "os_array")
    ws_idle = elaborate_ws(m, ws_array, ws)
    os_idle = elaborate_os(m, os, os_array)
    mode = Signal(name="mode_os")  # 0: weight-stationary (the zero tile after reset)

    word = unit.i_instr.payload.payload
    is_os = word[:8] == ComputeOS.OPCODE  # (the opcode: bits 7:0)
    ws_may = ~mode | os_idle  # the array may run (or already runs) the family
    os_may = mode | ws_idle
    for half, may in ((ws, ws_may & ~is_os), (os, os_may & is_os)):
        m.d.comb += [half.i_instr.payload.eq(unit.i_instr.payload),
                     half.i_instr.valid.eq(unit.i_instr.valid & may)]
    m.d.comb += unit.i_instr.ready.eq(Mux(is_os, os.i_instr.ready & os_may,
                                          ws.i_instr.ready & ws_may))
    with m.If(unit.i_instr.valid & unit.i_instr.ready):
        m.d.sync += mode.eq(is_os)

    _select_ports(m, unit, ws, os, mode)
    _select_array(m, array, ws_array, os_array, mode)


def _select_ports(m: Module, unit, ws: _View, os: _View, mode: Value) -> None:
    """The mode's half drives the unit's outputs; both halves see its inputs."""
    for name in ("spad_in", "spad_wt"):
        port, a, b = getattr(unit, name), getattr(ws, name), getattr(os, name)
        m.d.comb += [port.addr.eq(Mux(mode, b.addr, a.addr)), port.en.eq(Mux(mode, b.en, a.en)),
                     a.data.eq(port.data), b.data.eq(port.data)]
    m.d.comb += [
        unit.o_acc.valid.eq(Mux(mode, os.o_acc.valid, ws.o_acc.valid)),
        unit.o_acc.payload.eq(Mux(mode, os.o_acc.payload.as_value(),
                                  ws.o_acc.payload.as_value())),
        ws.o_acc.ready.eq(unit.o_acc.ready),
        os.o_acc.ready.eq(unit.o_acc.ready),
        unit.o_preload_done.eq(ws.o_preload_done),
        unit.o_compute_done.valid.eq(ws.o_compute_done.valid | os.o_compute_done.valid),
        unit.o_compute_done.tag.eq(Mux(mode, os.o_compute_done.tag, ws.o_compute_done.tag)),
        unit.o_events.eq(Mux(mode, os.o_events.as_value(), ws.o_events.as_value())),
    ]


def _select_array(m: Module, array, ws: _View, os: _View, mode: Value) -> None:
    """The mode's half feeds the array's activations and takes its results."""
    a, c = array.i_a, array.o_c
    m.d.comb += [
        array.i_os.eq(mode),
        array.i_weights.valid.eq(ws.i_weights.valid),
        array.i_weights.payload.eq(ws.i_weights.payload),
        ws.i_weights.ready.eq(array.i_weights.ready),
        array.i_b.valid.eq(os.i_b.valid),
        array.i_b.payload.eq(os.i_b.payload),
        os.i_b.ready.eq(array.i_b.ready),
        a.valid.eq(Mux(mode, os.i_a.valid, ws.i_a.valid)),
        a.payload.eq(Mux(mode, os.i_a.payload.as_value(), ws.i_a.payload.as_value())),
        ws.i_a.ready.eq(a.ready),
        os.i_a.ready.eq(a.ready),
        ws.o_c.valid.eq(c.valid & ~mode),
        os.o_c.valid.eq(c.valid & mode),
        ws.o_c.payload.eq(c.payload),
        os.o_c.payload.eq(c.payload),
        c.ready.eq(Mux(mode, os.o_c.ready, ws.o_c.ready)),
    ]
