# amaranth: UnusedElaboratable=no

"""`PortMap`: Verilator's C++ names for the ports, and the generated harness header."""

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from systolic.errors import SimulationError
from systolic.sim.verilator.ports import Port, PortMap, verilator_name

from .copy_engine import CopyEngine


@pytest.mark.parametrize(("name", "cpp"), [
    ("clk", "clk"),
    ("unit_busy_ld", "unit_busy_ld"),
    ("i_instr__payload", "i_instr___05Fpayload"),
    ("trace__issue__0", "trace___05Fissue___05F0"),
    ("a___b", "a___05F_b"),
    ("x$y", "x__024y"),
])
def test_verilator_name(name: str, cpp: str) -> None:
    assert verilator_name(name) == cpp


def test_copy_engine_ports_and_header() -> None:
    ports = PortMap(CopyEngine(4))
    assert [p.name for p in ports.counters] == [
        "cycles", "instructions", "unit_busy__0", "unit_busy__1", "unit_busy__2"]
    assert ports.port("i_instr__payload").width == 102
    lines = ports.header(top_class="Vcopy", bus_bytes=4, mem_latency=5).splitlines()
    for expected in (
        '#include "Vcopy.h"',
        "#define CMD_WORDS 4",
        "#define BUS_BYTES 4",
        "#define MEM_LATENCY 5",
        "#define WRITE_BITS 68",
        "#define WRITE_ADDR_LSB 0",
        "#define WRITE_DATA_LSB 32",
        "#define WRITE_STROBE_LSB 64",
        "#define P_INSTR_PAYLOAD i_instr___05Fpayload",
        "#define FOR_EACH_ACCEPT(X) X(trace___05Faccept, 0, 1, 4)",
        ("#define FOR_EACH_ISSUE(X) X(trace___05Fissue___05F0, 0, 1, 4) "
         "X(trace___05Fissue___05F1, 0, 1, 4) X(trace___05Fissue___05F2, 0, 1, 4)"),
        ('#define FOR_EACH_COUNTER(X) X("cycles", cycles, 64) '
         'X("instructions", instructions, 64) X("unit_busy__0", unit_busy___05F0, 64) '
         'X("unit_busy__1", unit_busy___05F1, 64) X("unit_busy__2", unit_busy___05F2, 64)'),
    ):
        assert expected in lines


def test_wrong_bus_width_is_refused() -> None:
    with pytest.raises(SimulationError, match=r"^i_mem_resp.payload must be exactly the 64-bit "
                                              r"data of a 8-byte bus, not 32 bits$"):
        PortMap(CopyEngine(4)).header(top_class="V", bus_bytes=8, mem_latency=0)


class _NoTrace(wiring.Component):
    start: In(1)
    busy: Out(1)

    def elaborate(self, platform):
        return Module()


def test_missing_port_is_named() -> None:
    with pytest.raises(SimulationError, match=r"^the design has no port 'done' of the "
                                              r"Accelerator contract; it has: busy, start$"):
        PortMap(_NoTrace())


@pytest.mark.parametrize("latency", [0, 3])
def test_wrapper_registers_inputs_and_ties_the_readys(latency: int) -> None:
    text = PortMap(CopyEngine(4)).wrapper("copy", mem_latency=latency)
    lines = [line.strip() for line in text.splitlines()]
    assert lines[1].startswith("module copy_harness(clk, rst, start, busy, done,")
    assert "o_mem_req__ready" not in lines[1] and "o_mem_write__ready" not in lines[1]
    registered = ["rst", "start", "i_instr__valid", "i_instr__payload"]
    if latency:
        registered += ["i_mem_resp__valid", "i_mem_resp__payload"]
    for name in registered:
        assert f"always @(posedge clk) {name}__r <= {name};" in lines
        assert f".{name}({name}__r)," in lines or f".{name}({name}__r)" in lines
    assert "reg rst__r = 1'd1;" in lines
    assert "reg [101:0] i_instr__payload__r = 102'd0;" in lines
    if not latency:
        assert ".i_mem_resp__payload(i_mem_resp__payload)," in lines
    assert ".o_mem_req__ready(1'b1)," in lines and ".o_mem_write__ready(1'b1)," in lines
    assert "output [63:0] cycles;" in lines
    assert lines[-1] == "endmodule"


def test_wrapper_refuses_an_unknown_input() -> None:
    ports = PortMap.__new__(PortMap)  # only the port list matters here
    ports.ports = {name: Port(name, (name,), 1, True, 1) for name in ("start", "mode")}
    with pytest.raises(SimulationError, match=r"^the design has an input 'mode' outside the "
                                              r"Accelerator contract$"):
        ports.wrapper("x", mem_latency=1)
