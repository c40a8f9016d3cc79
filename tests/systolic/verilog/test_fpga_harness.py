"""`systolic.verilog.fpga_harness`: the accelerator's ports behind two shift chains."""

import re

import pytest

from systolic.config import ArrayConfig
from systolic.verilog.bundle import render_bundle
from systolic.verilog.fpga_harness import HARNESS_TOP, HarnessPorts, harness_verilog, top_ports
from systolic.verilog.fpga_parts import PARTS

from .make_fpga_data import MAC_RAM

OTHER = "module other(clk, x);\n  input clk;\n  input [99:0] x;\nendmodule\n"


def test_ports_of_every_declaration_style() -> None:
    ports = top_ports(OTHER + MAC_RAM, "mac_ram")
    assert ports == HarnessPorts(inputs=(("a", 8), ("b", 8), ("addr", 9), ("we", 1)),
                                 outputs=(("q", 16), ("p", 16)))
    assert (ports.input_bits, ports.output_bits, ports.flip_flops) == (26, 32, 58)


def test_ports_of_the_emitted_accelerator_match_its_declarations() -> None:
    bundle = render_bundle(ArrayConfig(rows=2, cols=2, spad_kib=8, acc_kib=2))
    verilog = bundle.files[bundle.verilog_name]
    ports = top_ports(verilog, bundle.top)
    header = re.search(rf"^module {bundle.top}\((.*?)\);", verilog, re.MULTILINE | re.DOTALL)
    assert header is not None
    listed = {name.strip() for name in header.group(1).split(",")}
    assert listed == {name for name, _ in ports.inputs + ports.outputs} | {"clk", "rst"}
    assert ("i_instr__valid", 1) in ports.inputs and ("done", 1) in ports.outputs


def test_missing_module_or_clock_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^module absent not found in the Verilog$"):
        top_ports(MAC_RAM, "absent")
    with pytest.raises(ValueError, match=r"^module comb has no clk input$"):
        top_ports("module comb(a, y);\n  input a;\n  output y;\nendmodule\n", "comb")


def test_harness_wires_every_bit_once() -> None:
    ports = top_ports(MAC_RAM, "mac_ram")
    text = harness_verilog("mac_ram", ports)
    assert text.startswith("// FPGA harness of mac_ram")
    assert f"module {HARNESS_TOP}(clk, rst, serial_in, capture, serial_out);" in text
    assert "  reg [25:0] chain_in = 26'd0;" in text
    assert "    chain_in <= {chain_in[24:0], serial_in};" in text
    assert "    chain_out <= capture ? result : {chain_out[30:0], 1'b0};" in text
    assert "  assign serial_out = chain_out[31];" in text
    connections = re.findall(r"^    \.(\w+)\((\w+)(?:\[(\d+):(\d+)\])?\),?$", text, re.MULTILINE)
    assert [name for name, *_ in connections] == ["clk", "rst", "a", "b", "addr", "we", "q", "p"]
    for bus, width in (("chain_in", 26), ("result", 32)):
        covered = sorted(bit for _, name, high, low in connections if name == bus
                         for bit in range(int(low), int(high) + 1))
        assert covered == list(range(width))


def test_one_bit_chains_have_no_slice() -> None:
    text = harness_verilog("m", HarnessPorts(inputs=(("a", 1),), outputs=(("y", 1),)))
    assert "    chain_in <= serial_in;" in text
    assert "    chain_out <= capture ? result : 1'b0;" in text
    assert "    .y(result[0:0])\n  );" in text


def test_nexus_harness_is_clocked_by_the_oscillator() -> None:
    ports = top_ports(MAC_RAM, "mac_ram")
    text = harness_verilog("mac_ram", ports, oscillator=PARTS["nexus-40k"].oscillator,
                           target_mhz=100.0)
    assert "  wire oscillator_clk;" in text
    assert ('  OSCA #(.HF_CLK_DIV("3")) oscillator (.HFOUTEN(1\'b1), .HFSDSCEN(1\'b0), '
            ".HFCLKOUT(oscillator_clk));") in text
    assert "  always @(posedge oscillator_clk) begin" in text
    assert "    .clk(oscillator_clk)," in text and "posedge clk" not in text
    assert f"module {HARNESS_TOP}(clk, rst, serial_in, capture, serial_out);" in text
    assert PARTS["ecp5-85k"].oscillator is None and PARTS["gw2a-18"].oscillator is None
    assert "OSCA" not in harness_verilog("mac_ram", ports)
