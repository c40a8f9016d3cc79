"""Record real FPGA tool output for the tests of systolic.verilog.fpga_report (fpga_data/).

Runs the flow (Yosys synth_ecp5 and nextpnr-ecp5 from the yowasp wheels, seconds each) on two
small designs written below and keeps what the report parsing reads:

- `mac_ram`, which fits an ECP5-25K: nextpnr's log, its `--report` JSON and the part of Yosys'
  netlist that names the critical paths' cells (fits_*);
- `dsp_hog`, 40 registered multipliers against the 28 of an ECP5-25K: nextpnr's log up to
  its error (overflow_nextpnr.log).

Usage: python tests/systolic/verilog/make_fpga_data.py  (needs the fpga extra)
"""

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from systolic.verilog.fpga_flow import implement
from systolic.verilog.fpga_harness import HARNESS_TOP
from systolic.verilog.fpga_parts import PARTS

DATA = Path(__file__).parent / "fpga_data"

MAC_RAM = """\
module mac_ram(clk, rst, a, b, addr, we, q, p);
  input clk;
  input rst;
  input [7:0] a;
  input [7:0] b;
  input [8:0] addr;
  input we;
  output [15:0] q;
  output [15:0] p;
  reg [15:0] mem [0:511];
  reg [15:0] q_r;
  reg [15:0] p_r;
  always @(posedge clk) begin
    p_r <= $signed(a) * $signed(b);
    if (we) mem[addr] <= p_r;
    q_r <= mem[addr];
  end
  assign q = q_r;
  assign p = p_r;
endmodule
"""


def dsp_hog(count: int = 40) -> str:
    """Return a module of `count` registered 8x8 products, each its own DSP block."""
    lines = [
        "module dsp_hog(clk, rst, a, b, p);",
        "  input clk;",
        "  input rst;",
        f"  input [{8 * count - 1}:0] a;",
        f"  input [{8 * count - 1}:0] b;",
        f"  output [{16 * count - 1}:0] p;",
        f"  reg [{16 * count - 1}:0] p_r;",
        "  always @(posedge clk) begin",
    ]
    lines += [f"    p_r[{16 * i + 15}:{16 * i}] <= $signed(a[{8 * i + 7}:{8 * i}]) * "
              f"$signed(b[{8 * i + 7}:{8 * i}]);" for i in range(count)]
    lines += ["  end", "  assign p = p_r;", "endmodule", ""]
    return "\n".join(lines)


def netlist_excerpt(netlist: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """Return the harness module of `netlist` cut to the critical paths' cells and the
    names of the bits on their ports."""
    module = netlist["modules"][HARNESS_TOP]
    wanted = {step[end]["cell"] for path in report["critical_paths"]
              for step in path["path"] for end in ("from", "to")}
    cells = {name: {"type": cell["type"], "connections": cell["connections"]}
             for name, cell in module["cells"].items() if name in wanted}
    bits = {bit for cell in cells.values() for port in cell["connections"].values()
            for bit in port}
    netnames = {name: {"hide_name": entry["hide_name"], "bits": entry["bits"]}
                for name, entry in module["netnames"].items() if bits & set(entry["bits"])}
    return {"modules": {HARNESS_TOP: {"cells": cells, "netnames": netnames}}}


def record(folder: Path) -> None:
    """Run both designs with the cache in `folder` and copy their results into DATA."""
    os.environ["SYSTOLIC_CACHE_DIR"] = str(folder)
    part = PARTS["ecp5-25k"]
    fits = Path(implement(MAC_RAM, "mac_ram", part, progress=None,
                             keep_netlist=True).cache_folder)
    report = json.loads((fits / "report.json").read_text(encoding="utf-8"))
    shutil.copy(fits / "nextpnr.log", DATA / "fits_nextpnr.log")
    shutil.copy(fits / "report.json", DATA / "fits_report.json")
    overflow = Path(implement(dsp_hog(), "dsp_hog", part, progress=None).cache_folder)
    shutil.copy(overflow / "nextpnr.log", DATA / "overflow_nextpnr.log")
    netlist = json.loads((fits / "netlist.json").read_text(encoding="utf-8"))
    (DATA / "fits_netlist.json").write_text(
        json.dumps(netlist_excerpt(netlist, report), indent=1, sort_keys=True) + "\n",
        encoding="utf-8")


def main() -> None:
    """Record the data into fpga_data/ next to this script."""
    DATA.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        record(Path(folder))


if __name__ == "__main__":
    main()
