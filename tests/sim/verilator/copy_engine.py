"""A tiny design with the Accelerator's top-level ports, for testing the Verilator machinery.

`CopyEngine` copies one aligned external beat per command (payload {src: 32, dst: 32,
strobe: bus_bytes}); unit 3 is HALT. It takes one command at a time: accepted in cycle a, it
issues its read request in a + 1, writes the response (masked by `strobe`) and completes in
a + 1 + mem_latency, and the next command is accepted the cycle after. `expected_run` is the
exact Python model of that behaviour: the oracle the harness's results must equal.
"""

import dataclasses

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.hdl.ports import write_beat_layout

__all__ = ["CopyEngine", "Expected", "copy_command", "expected_run"]

PAYLOAD_BITS = 100
HALT_UNIT = 3


def _strobe_layout() -> data.StructLayout:
    return data.StructLayout({"valid": 1, "tag": 4})


class CopyEngine(wiring.Component):
    """One beat copy per command; see the module docstring."""

    def __init__(self, bus_bytes: int) -> None:
        self.bus_bytes = bus_bytes
        strobe = _strobe_layout()
        super().__init__({
            "start": In(1),
            "busy": Out(1),
            "done": Out(1),
            "i_instr": In(stream.Signature(data.StructLayout({"payload": PAYLOAD_BITS,
                                                               "unit": 2}))),
            "o_mem_req": Out(stream.Signature(data.StructLayout({"addr": 32}))),
            "i_mem_resp": In(stream.Signature(data.StructLayout({"data": 8 * bus_bytes}))),
            "o_mem_write": Out(stream.Signature(write_beat_layout(bus_bytes))),
            "cycles": Out(64),
            "instructions": Out(64),
            "unit_busy": Out(64).array(3),
            "trace": Out(wiring.Signature({
                "accept": Out(strobe),
                "issue": Out(strobe).array(3),
                "complete": Out(strobe).array(3),
            })),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus_bytes
        busy, done, active, requested = Signal(), Signal(), Signal(), Signal()
        src, dst = Signal(32), Signal(32)
        mask = Signal(bus)
        unit = Signal(2)
        tag, next_tag = Signal(4), Signal(4)
        command = self.i_instr.payload
        is_halt = command.unit == HALT_UNIT
        accept = self.i_instr.valid & self.i_instr.ready
        request = self.o_mem_req.valid & self.o_mem_req.ready
        response = self.i_mem_resp.valid & active

        m.d.comb += [
            self.busy.eq(busy),
            self.done.eq(done),
            self.i_instr.ready.eq(busy & ~active),
            self.i_mem_resp.ready.eq(1),
            self.o_mem_req.valid.eq(active & ~requested),
            self.o_mem_req.payload.addr.eq(src),
            self.o_mem_write.valid.eq(response),
            self.o_mem_write.payload.addr.eq(dst),
            self.o_mem_write.payload.data.eq(self.i_mem_resp.payload.data),
            self.o_mem_write.payload.strobe.eq(mask),
            self.trace.accept.valid.eq(accept),
            self.trace.accept.tag.eq(next_tag),
        ]
        for u in range(3):
            m.d.comb += [
                self.trace.issue[u].valid.eq(request & (unit == u)),
                self.trace.issue[u].tag.eq(tag),
                self.trace.complete[u].valid.eq(response & (unit == u)),
                self.trace.complete[u].tag.eq(tag),
            ]

        with m.If(self.start & ~busy):
            m.d.sync += [busy.eq(1), done.eq(0), next_tag.eq(0),
                         self.cycles.eq(0), self.instructions.eq(0)]
            m.d.sync += [counter.eq(0) for counter in self.unit_busy]
        with m.Elif(busy):
            m.d.sync += self.cycles.eq(self.cycles + 1)
            for u in range(3):
                with m.If(active & (unit == u)):
                    m.d.sync += self.unit_busy[u].eq(self.unit_busy[u] + 1)
            with m.If(accept & is_halt):
                m.d.sync += [busy.eq(0), done.eq(1), self.instructions.eq(self.instructions + 1)]
            with m.Elif(accept):
                word = command.payload
                m.d.sync += [
                    active.eq(1), requested.eq(0), unit.eq(command.unit), tag.eq(next_tag),
                    next_tag.eq(next_tag + 1),
                    src.eq(word[0:32]), dst.eq(word[32:64]), mask.eq(word[64:64 + bus]),
                ]
            with m.If(request):
                m.d.sync += requested.eq(1)
            with m.If(response):
                m.d.sync += [active.eq(0), self.instructions.eq(self.instructions + 1)]
        return m


def copy_command(src: int, dst: int, strobe: int, unit: int) -> int:
    """Return the command integer of one copy (unit 0..2) or of HALT (unit 3)."""
    payload = src | dst << 32 | strobe << 64
    return payload | unit << PAYLOAD_BITS


@dataclasses.dataclass(frozen=True)
class Expected:
    """What `CopyEngine` must produce: memory, times, counter ports by Verilog name."""

    memory: bytearray
    times: tuple[tuple[int, int, int], ...]
    ports: dict[str, int]


def expected_run(copies: list[tuple[int, int, int, int]], memory: bytes, *, bus_bytes: int,
                 mem_latency: int) -> Expected:
    """Model `copies` ((src, dst, strobe, unit) each) followed by HALT, cycle for cycle."""
    image = bytearray(memory)
    times = []
    busy = [0, 0, 0]
    accept = 1
    for src, dst, strobe, unit in copies:
        issue = accept + 1
        complete = issue + mem_latency
        beat = bytes(image[src:src + bus_bytes]).ljust(bus_bytes, b"\0")
        for lane in range(bus_bytes):
            if strobe >> lane & 1:
                image[dst + lane] = beat[lane]
        times.append((accept, issue, complete))
        busy[unit] += complete - accept
        accept = complete + 1
    times.append((accept, accept, accept))
    ports = {"cycles": accept, "instructions": len(copies) + 1}
    ports.update({f"unit_busy__{u}": busy[u] for u in range(3)})
    return Expected(image, tuple(times), ports)
