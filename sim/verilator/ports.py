"""The top-level ports of an accelerator-like component, as Verilog and as Verilator's C++ sees them.

A component that follows the Accelerator port contract (docs: notes, "The top-level Accelerator")
has `start`, `busy`, `done`, the `i_instr` command stream, the external memory streams
`o_mem_req`, `i_mem_resp` and `o_mem_write`, counters and the `trace` strobes. `PortMap` lists
its flattened ports (the names `amaranth.back.verilog.convert` gives them: the signature path
joined with "__"), passes them to the Verilog emitter explicitly, writes the Verilog wrapper
the harness simulates (`wrapper`) and the C++ header `harness_ports.h` that binds the harness
(harness.cpp) to the wrapper's ports.

The wrapper (`<top>_harness`) has the design's ports under the same names, except that the
always-ready `o_mem_req.ready` and `o_mem_write.ready` are tied to 1 inside, and it *registers*
the inputs `rst`, `start`, `i_instr` and (when the memory latency is at least 1) `i_mem_resp`:
what the harness sets before the clock edge that ends cycle c is what the design sees in cycle
c + 1 (the registered `rst` starts at 1: the design is in reset until the harness's first edge
with `rst` low). Verilator evaluates logic driven combinationally by top-level inputs again in
every `eval()`; registered inputs move the design's large input cones (the dispatcher's hazard
checks on the command payload, the load path behind the response, every register's
synchronous reset) out of that region, so the harness needs
one full evaluation per cycle instead of two. With a latency of 0 the response must reach the
design in the cycle of its request, so `i_mem_resp` stays a direct input.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from amaranth.hdl import Const, Value
from amaranth.hdl._ir import PortDirection
from amaranth.lib import data, wiring

from systolic.errors import SimulationError

__all__ = ["COUNTER_MEMBERS", "REGISTERED_INPUTS", "TIED_INPUTS", "Port", "PortMap",
           "verilator_name", "wrapper_name"]

COUNTER_MEMBERS = ("cycles", "instructions", "unit_busy", "hazard_stall", "dispatch_stall",
                   "events")
"""Top-level members whose ports are counters, reported after a run (`events__<name>`: the
energy event counters)."""


REGISTERED_INPUTS = ("start", "i_instr__valid", "i_instr__payload")
"""Inputs the wrapper registers (plus `i_mem_resp` when the memory latency is at least 1)."""

RESPONSE_INPUTS = ("i_mem_resp__valid", "i_mem_resp__payload")

TIED_INPUTS = ("o_mem_req__ready", "o_mem_write__ready")
"""Inputs the wrapper ties to 1 (the external memory model is always ready)."""


def wrapper_name(top: str) -> str:
    """Return the name of the harness wrapper module around the design `top`."""
    return f"{top}_harness"


def verilator_name(name: str) -> str:
    """Return the C++ member name Verilator gives the Verilog identifier `name`.

    Verilator keeps letters, digits and single underscores, and encodes the second underscore of
    every "__" pair as "__05F" (and any other character as "__0" plus its hex code), so that its
    own "__" separators never collide with user names.
    """
    out = []
    index = 0
    while index < len(name):
        char = name[index]
        if char.isascii() and (char.isalpha() or (index > 0 and char.isdigit())):
            out.append(char)
        elif char == "_":
            if index + 1 < len(name) and name[index + 1] == "_":
                out.append("___05F")
                index += 1
            else:
                out.append("_")
        else:
            out.append(f"__0{ord(char):X}")
        index += 1
    return "".join(out)


@dataclasses.dataclass(frozen=True)
class Port:
    """One top-level port: its Verilog `name`, signature `path`, `width`, direction and `shape`
    (the member's shape: a `data.Layout` for structured ports)."""

    name: str
    path: tuple[str | int, ...]
    width: int
    is_input: bool
    shape: Any

    @property
    def cpp(self) -> str:
        """The port's member name in the Verilated C++ class."""
        return verilator_name(self.name)


class PortMap:
    """The flattened ports of `component` and the facts the harness needs about them.

    Raises `SimulationError` when the component lacks a port of the Accelerator contract.
    """

    def __init__(self, component: wiring.Component) -> None:
        self._values: dict[str, tuple[Value, PortDirection]] = {}
        self.ports: dict[str, Port] = {}
        for path, member, value in component.signature.flatten(component):
            name = "__".join(str(part) for part in path)
            raw = Value.cast(value)
            if isinstance(raw, Const):  # tied off (an always-ready `ready`): not a port
                continue
            is_input = member.flow == wiring.In
            direction = PortDirection.Input if is_input else PortDirection.Output
            self._values[name] = (raw, direction)
            self.ports[name] = Port(name, tuple(path), len(raw), is_input, member.shape)
        self._component = component
        for required in (
            "start", "busy", "done",
            "i_instr__valid", "i_instr__ready", "i_instr__payload",
            "o_mem_req__valid", "o_mem_req__ready", "o_mem_req__payload",
            "i_mem_resp__valid", "i_mem_resp__payload",
            "o_mem_write__valid", "o_mem_write__ready", "o_mem_write__payload",
            "trace__accept",
        ):
            self.port(required)

    def port(self, name: str) -> Port:
        """Return the port called `name`."""
        try:
            return self.ports[name]
        except KeyError:
            raise SimulationError(
                f"the design has no port {name!r} of the Accelerator contract; "
                f"it has: {', '.join(sorted(self.ports))}"
            ) from None

    @property
    def verilog_ports(self) -> Mapping[str, tuple[Value, PortDirection]]:
        """The `ports=` argument of `amaranth.back.verilog.convert`."""
        return dict(self._values)

    @property
    def counters(self) -> tuple[Port, ...]:
        """The counter ports, in signature order."""
        return tuple(
            p for p in self.ports.values() if not p.is_input and p.path[0] in COUNTER_MEMBERS
        )

    def _strobe(self, name: str) -> str:
        """Return `X(port, valid bit, tag bit, tag bits)` for the trace strobe port `name`."""
        port = self.port(name)
        layout = port.shape
        if not isinstance(layout, data.StructLayout) or {k for k, _ in layout} != {"valid", "tag"}:
            raise SimulationError(f"trace port {name!r} must be a {{valid, tag}} struct")
        tag = layout["tag"]
        if tag.width > 16:
            raise SimulationError(f"trace port {name!r} has a {tag.width}-bit tag; at most 16")
        return f"X({port.cpp}, {layout['valid'].offset}, {tag.offset}, {tag.width})"

    def _strobes(self, kind: str) -> list[str]:
        names = [p.name for p in self.ports.values() if p.path[:2] == ("trace", kind)]
        if not names:
            raise SimulationError(f"the design has no trace.{kind} ports")
        return [self._strobe(name) for name in names]

    def _field_offset(self, stream_name: str, field: str) -> int:
        payload: Any = getattr(self._component, stream_name).payload
        return int(payload.shape()[field].offset)

    def wrapper(self, top: str, *, mem_latency: int) -> str:
        """Return the Verilog of the harness wrapper around the design module `top` (module
        docstring); its module is `wrapper_name(top)`."""
        registered = REGISTERED_INPUTS + (RESPONSE_INPUTS if mem_latency > 0 else ())
        known = {"clk", "rst", *REGISTERED_INPUTS, *RESPONSE_INPUTS, *TIED_INPUTS}
        for port in self.ports.values():
            if port.is_input and port.name not in known:
                raise SimulationError(
                    f"the design has an input {port.name!r} outside the Accelerator contract"
                )
        outer = ["clk", "rst"] + [
            p.name for p in self.ports.values() if p.name not in TIED_INPUTS
        ]
        lines = [
            "// Generated by systolic.sim.verilator.ports: the harness's view of the design.",
            f"module {wrapper_name(top)}({', '.join(outer)});",
            "  input clk;",
            "  input rst;",
            "  reg rst__r = 1'd1;",
            "  always @(posedge clk) rst__r <= rst;",
        ]
        connections = [".clk(clk)", ".rst(rst__r)"]
        for port in self.ports.values():
            width = f"[{port.width - 1}:0] " if port.width > 1 else ""
            if port.name in TIED_INPUTS:
                connections.append(f".{port.name}(1'b1)")
                continue
            lines.append(f"  {'input' if port.is_input else 'output'} {width}{port.name};")
            if port.name in registered:
                lines.append(f"  reg {width}{port.name}__r = {port.width}'d0;")
                lines.append(f"  always @(posedge clk) {port.name}__r <= {port.name};")
                connections.append(f".{port.name}({port.name}__r)")
            else:
                connections.append(f".{port.name}({port.name})")
        lines.append(f"  {top} dut (")
        lines.append(",\n".join(f"    {c}" for c in connections))
        lines.append("  );")
        lines.append("endmodule")
        return "\n".join(lines) + "\n"

    def header(self, *, top_class: str, bus_bytes: int, mem_latency: int) -> str:
        """Return harness_ports.h for the Verilated class `top_class` (of the wrapper)."""
        instr = self.port("i_instr__payload")
        write = self.port("o_mem_write__payload")
        resp = self.port("i_mem_resp__payload")
        if resp.width != 8 * bus_bytes or self._field_offset("i_mem_resp", "data") != 0:
            raise SimulationError(
                f"i_mem_resp.payload must be exactly the {8 * bus_bytes}-bit data of a "
                f"{bus_bytes}-byte bus, not {resp.width} bits"
            )
        lines = [
            "// Generated by systolic.sim.verilator.ports: the harness's view of the design.",
            "#pragma once",
            f'#include "{top_class}.h"',
            f"#define TOP_CLASS {top_class}",
            f"#define CMD_WORDS {(instr.width + 31) // 32}",
            f"#define BUS_BYTES {bus_bytes}",
            f"#define MEM_LATENCY {mem_latency}",
            f"#define WRITE_BITS {write.width}",
            f"#define WRITE_ADDR_LSB {self._field_offset('o_mem_write', 'addr')}",
            f"#define WRITE_DATA_LSB {self._field_offset('o_mem_write', 'data')}",
            f"#define WRITE_STROBE_LSB {self._field_offset('o_mem_write', 'strobe')}",
            f"#define REQ_ADDR_LSB {self._field_offset('o_mem_req', 'addr')}",
        ]
        for macro, name in (
            ("P_START", "start"), ("P_DONE", "done"),
            ("P_INSTR_VALID", "i_instr__valid"), ("P_INSTR_READY", "i_instr__ready"),
            ("P_INSTR_PAYLOAD", "i_instr__payload"),
            ("P_REQ_VALID", "o_mem_req__valid"), ("P_REQ_PAYLOAD", "o_mem_req__payload"),
            ("P_RESP_VALID", "i_mem_resp__valid"), ("P_RESP_PAYLOAD", "i_mem_resp__payload"),
            ("P_WRITE_VALID", "o_mem_write__valid"), ("P_WRITE_PAYLOAD", "o_mem_write__payload"),
        ):
            lines.append(f"#define {macro} {self.port(name).cpp}")
        lines.append(f"#define FOR_EACH_ACCEPT(X) {self._strobe('trace__accept')}")
        for macro, kind in (("FOR_EACH_ISSUE", "issue"), ("FOR_EACH_COMPLETE", "complete")):
            lines.append(f"#define {macro}(X) {' '.join(self._strobes(kind))}")
        items = " ".join(f'X("{p.name}", {p.cpp}, {p.width})' for p in self.counters)
        lines.append(f"#define FOR_EACH_COUNTER(X) {items}")
        return "\n".join(lines) + "\n"
