"""The FPGA harness: the accelerator behind registers, on five pins.

The accelerator's top has far more port bits than any package has pins (1,681 for a 2x2 array
against 197 user I/Os of an ECP5 in CABGA381). Place-and-route of the bare top fails on I/O,
and leaving the ports unplaced (nextpnr's `--out-of-context`) also drops the global clock. So
the FPGA flow synthesizes a harness around it (`harness_verilog`), a module
`systolic_fpga_harness` with the pins `clk`, `rst`, `serial_in`, `capture` and `serial_out`:

- every input bit of the accelerator (except `clk` and `rst`) comes from one register of a
  shift chain fed by `serial_in`;
- every output bit is captured into one register of a second chain (`capture` high: load the
  outputs; low: shift towards `serial_out`).

Nothing of the accelerator can be optimized away (every output reaches a pin) and every path
into and out of it starts and ends at a register, as it would behind a bus interface. The
harness costs one flip-flop per port bit and one LUT per output bit (the load/shift choice),
counted in the report (`HarnessPorts.flip_flops`). On the Nexus parts the harness and the
accelerator are clocked by the on-chip oscillator instead of the `clk` pin (fpga_clock.py).
"""

import dataclasses
import re

from systolic.verilog.fpga_clock import oscillator_verilog

__all__ = ["HARNESS_TOP", "HarnessPorts", "harness_verilog", "top_ports"]

HARNESS_TOP = "systolic_fpga_harness"
_PASSED_THROUGH = ("clk", "rst")
_PORT = re.compile(r"\b(input|output)\s+(?:\[(\d+):(\d+)\]\s*)?(\w+)\s*;")


@dataclasses.dataclass(frozen=True)
class HarnessPorts:
    """The accelerator's ports as the harness wires them: (name, width) in declaration order."""

    inputs: tuple[tuple[str, int], ...]  #: inputs fed from the input chain (clk, rst excepted)
    outputs: tuple[tuple[str, int], ...]  #: outputs captured into the output chain

    @property
    def input_bits(self) -> int:
        """Return the number of input bits (registers of the input chain)."""
        return sum(width for _, width in self.inputs)

    @property
    def output_bits(self) -> int:
        """Return the number of output bits (registers of the output chain)."""
        return sum(width for _, width in self.outputs)

    @property
    def flip_flops(self) -> int:
        """Return the flip-flops the harness adds to the accelerator's."""
        return self.input_bits + self.output_bits


def top_ports(verilog: str, top: str) -> HarnessPorts:
    """Return the ports of module `top` in `verilog` (declared `input [N:0] name;`).

    Raises `ValueError` when the module is missing or lacks a `clk` input.
    """
    start = re.search(rf"^module {re.escape(top)}\(", verilog, re.MULTILINE)
    if start is None:
        raise ValueError(f"module {top} not found in the Verilog")
    end = verilog.find("\nendmodule", start.end())
    inputs: list[tuple[str, int]] = []
    outputs: list[tuple[str, int]] = []
    seen_clock = False
    for match in _PORT.finditer(verilog[start.end() : end]):
        direction, high, low, name = match.groups()
        width = int(high) - int(low) + 1 if high is not None else 1
        if name in _PASSED_THROUGH:
            seen_clock |= name == "clk"
            continue
        (inputs if direction == "input" else outputs).append((name, width))
    if not seen_clock:
        raise ValueError(f"module {top} has no clk input")
    return HarnessPorts(tuple(inputs), tuple(outputs))


def _chain(name: str, bits: int, shift_in: str) -> str:
    """Return the next value of a `bits`-wide shift chain that shifts `shift_in` in at bit 0."""
    return shift_in if bits == 1 else f"{{{name}[{bits - 2}:0], {shift_in}}}"


def _connections(ports: tuple[tuple[str, int], ...], bus: str) -> list[str]:
    lines, offset = [], 0
    for name, width in ports:
        lines.append(f"    .{name}({bus}[{offset + width - 1}:{offset}]),")
        offset += width
    return lines


def harness_verilog(top: str, ports: HarnessPorts, *, oscillator: str | None = None,
                    target_mhz: float = 100.0) -> str:
    """Return the Verilog of the harness module that instantiates `top` (see the module doc),
    clocked from its `clk` pin, or with `oscillator` (`nexus`) from the part's on-chip
    oscillator set for `target_mhz` (fpga_clock.py; the `clk` pin is then unused)."""
    ins, outs = max(ports.input_bits, 1), max(ports.output_bits, 1)
    clock = "clk" if oscillator is None else "oscillator_clk"
    wiring = _connections(ports.inputs, "chain_in") + _connections(ports.outputs, "result")
    zero = "1'b0"
    lines = [
        f"// FPGA harness of {top}: every port bit behind a register of a shift chain,",
        "// so the accelerator fits a package's pins and every path is register to register.",
        f"module {HARNESS_TOP}(clk, rst, serial_in, capture, serial_out);",
        "  input clk;",
        "  input rst;",
        "  input serial_in;",
        "  input capture;",
        "  output serial_out;",
        f"  reg [{ins - 1}:0] chain_in = {ins}'d0;",
        f"  reg [{outs - 1}:0] chain_out = {outs}'d0;",
        f"  wire [{outs - 1}:0] result;",
        *oscillator_verilog(oscillator, target_mhz, clock),
        f"  always @(posedge {clock}) begin",
        f"    chain_in <= {_chain('chain_in', ins, 'serial_in')};",
        f"    chain_out <= capture ? result : {_chain('chain_out', outs, zero)};",
        "  end",
        f"  assign serial_out = chain_out[{outs - 1}];",
        f"  {top} accelerator (",
        f"    .clk({clock}),",
        "    .rst(rst),",
        *wiring,
    ]
    lines[-1] = lines[-1].rstrip(",")
    lines += ["  );", "endmodule", ""]
    return "\n".join(lines)
