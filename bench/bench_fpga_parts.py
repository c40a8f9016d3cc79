"""Does a configuration fit an FPGA part? Synthesis and nextpnr's packing, no placement.

    nice -n 10 python bench/bench_fpga_parts.py --array 2x2 --spad-kib 8 --acc-kib 2 \\
        --parts ecp5-25k,ecp5-45k,ecp5-85k [--json out.json]

The accelerator of the configuration goes through the same flow as `systolic verilog --fpga`
(the harness, the family's Yosys script, its netlist kept and shared by the parts of a family:
`systolic.verilog.fpga_flow`), then nextpnr runs with `--pack-only`: its utilisation table
after packing says what the design needs of each resource (LUTs, flip-flops, DSP blocks, block
RAMs) and what runs out. Placement and routing (the Fmax) are `systolic verilog --fpga`'s, and
take tens of minutes to hours for a whole accelerator; packing takes a minute or two. Prints one
line per part with the time taken and the load average at the end.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from systolic.config import ArrayConfig
from systolic.verilog.bundle import render_bundle
from systolic.verilog.fpga_flow import flow_inputs, nextpnr_args, synthesize_netlist
from systolic.verilog.fpga_parts import Part, find_part
from systolic.verilog.fpga_report import parse_utilisation, resources, shortfall
from systolic.verilog.fpga_tools import (
    NEXTPNR_PHASES,
    PhaseClock,
    check_tools,
    run_tool,
    tool_versions,
)


def pack(verilog: str, top: str, part: Part) -> dict[str, Any]:
    """Return the resources (used, available) and shortfall of `verilog` on `part` after
    nextpnr's packing, and the seconds of synthesis (absent for a kept netlist) and packing."""
    check_tools(part)
    inputs, synth_key = flow_inputs(verilog, top, part, 100.0, tool_versions(part))
    clock = PhaseClock(f"pack {part.name}", sys.stderr)
    with tempfile.TemporaryDirectory(prefix="systolic-pack-") as folder:
        work = Path(folder)
        for name, text in inputs.items():
            (work / name).write_text(text, encoding="utf-8")
        seconds = synthesize_netlist(work, part, synth_key, clock)
        started = time.monotonic()
        status = run_tool(part.nextpnr_module, part.nextpnr_function,
                          [*nextpnr_args(part), "--pack-only"], work, work / "nextpnr.log",
                          NEXTPNR_PHASES, clock)
        seconds["pack"] = round(time.monotonic() - started, 1)
        log = (work / "nextpnr.log").read_text(encoding="utf-8", errors="replace")
    table = parse_utilisation(log)
    if status != 0 or not table:
        raise RuntimeError(f"nextpnr --pack-only failed on {part.name} (status {status})")
    return {"part": part.name, "device": part.device,
            "resources": resources(part, table), "shortfall": shortfall(part, table),
            "seconds": seconds}


def _line(config: ArrayConfig, row: dict[str, Any]) -> str:
    used = ", ".join(f"{name} {value['used']:,}/{value['available']:,}"
                     for name, value in row["resources"].items())
    verdict = ("fits after packing" if not row["shortfall"] else "does not fit: " + ", ".join(
        f"{item['resource']} {item['over']:,} over" for item in row["shortfall"]))
    return (f"{config.shape_text} {config.spad_kib}/{config.acc_kib} KiB on {row['part']}: "
            f"{used}; {verdict}; {row['seconds']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--array", default="2x2")
    parser.add_argument("--spad-kib", type=int, default=8)
    parser.add_argument("--acc-kib", type=int, default=2)
    parser.add_argument("--parts", default="ecp5-25k,ecp5-45k,ecp5-85k")
    parser.add_argument("--json", type=Path, help="write the rows as JSON")
    args = parser.parse_args()
    rows, cols = ArrayConfig.parse_shape(args.array)
    config = ArrayConfig(rows=rows, cols=cols, spad_kib=args.spad_kib, acc_kib=args.acc_kib)
    bundle = render_bundle(config)
    verilog = bundle.files[bundle.verilog_name]
    results = []
    for name in args.parts.split(","):
        row = pack(verilog, bundle.top, find_part(name))
        row["load_average"] = os.getloadavg()
        results.append(row)
        print(_line(config, row) + f"; load average {row['load_average'][0]:.1f}", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({"config": config.to_dict(), "parts": results},
                                        indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
