"""Reading nextpnr's results: resources used and available, Fmax, the critical path's ends.

nextpnr writes `--report report.json` after routing: `utilization` (cell type -> used,
available), `fmax` (clock net -> achieved and constraint, MHz, after routing) and
`critical_paths` (one per clock pair, each a list of clk-to-q, logic, routing and setup steps
between placed cells). A design that does not fit never gets that far: nextpnr prints its
`Device utilisation:` table after packing and stops at placement, so `parse_utilisation` reads
the table from the log and `shortfall` names the resources that run out and by how much.

The critical path's cells are nextpnr's (`chain_out_TRELLIS_FF_Q_4`); `signal_namer` maps a
cell's port to the design's own signal name through Yosys' netlist (`accelerator.k0[3]`).
"""

import re
from collections.abc import Callable
from typing import Any

from systolic.verilog.fpga_harness import HARNESS_TOP
from systolic.verilog.fpga_parts import Part

__all__ = [
    "critical_path",
    "fmax_mhz",
    "parse_utilisation",
    "read_outcome",
    "resources",
    "shortfall",
    "signal_namer",
]

_TABLE_START = "Device utilisation:"
_TABLE_ROW = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%\s*$")


def parse_utilisation(log: str) -> dict[str, dict[str, int]]:
    """Return the last `Device utilisation:` table of a nextpnr log: cell type -> used and
    available ({} when the log has none, as when nextpnr failed before packing)."""
    start = log.rfind(_TABLE_START)
    if start < 0:
        return {}
    table: dict[str, dict[str, int]] = {}
    for line in log[start:].splitlines()[1:]:
        match = _TABLE_ROW.match(line)
        if match is None:
            break
        name, used, available = match.groups()
        table[name] = {"used": int(used), "available": int(available)}
    return table


def _folded(part: Part, utilisation: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Return the table with each of the part's `equivalents` counted into its resource's
    unit cell type (its own row dropped) and its `ignored_cells` dropped."""
    table = {cell_type: dict(counts) for cell_type, counts in utilisation.items()
             if cell_type not in part.ignored_cells}
    for resource, cell_type, weight in part.equivalents:
        counts = table.pop(cell_type, None)
        if counts is not None:
            unit = table.setdefault(part.resources[resource], {"used": 0, "available": 0})
            unit["used"] += weight * counts["used"]
    return table


def resources(part: Part, utilisation: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Return the part's reported resources (luts, flip_flops, dsps, brams): used, available
    (in the unit cell type of each, equivalents counted in: fpga_parts.py)."""
    table = _folded(part, utilisation)
    return {
        name: dict(table.get(cell_type, {"used": 0, "available": 0}))
        for name, cell_type in part.resources.items()
    }


def shortfall(part: Part, utilisation: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """Return every resource the design needs more of than the part has: the resource (our
    name where we report it, else nextpnr's cell type), used, available and `over` (the
    excess), largest relative excess first (of equal ones, ours first: a Nexus DSP block's
    9x9 multipliers before its pre-adders and registers). Equivalents count in their
    resource's unit; the part's ignored cell types never run out."""
    names = {cell_type: name for name, cell_type in part.resources.items()}
    over = [
        {
            "resource": names.get(cell_type, cell_type),
            "cell_type": cell_type,
            "used": counts["used"],
            "available": counts["available"],
            "over": counts["used"] - counts["available"],
        }
        for cell_type, counts in _folded(part, utilisation).items()
        if counts["used"] > counts["available"]
    ]
    return sorted(over, key=lambda item: (-item["used"] / max(item["available"], 1),
                                          item["resource"] == item["cell_type"]))


def fmax_mhz(report: dict[str, Any]) -> tuple[float | None, float | None]:
    """Return the lowest achieved frequency of the report's clocks and its constraint (MHz),
    (None, None) for a design without a clocked path."""
    clocks = report.get("fmax", {})
    if not clocks:
        return None, None
    slowest = min(clocks.values(), key=lambda clock: float(clock["achieved"]))
    return float(slowest["achieved"]), float(slowest["constraint"])


Namer = Callable[[str, str], str]


def signal_namer(netlist: dict[str, Any], top: str) -> Namer:
    """Return `name(cell, port)`: the design's signal on that port of a netlist cell.

    Of the names a bit has, one of the accelerator's own (`accelerator.`) is preferred, then
    the shortest; a cell or port missing from the netlist gives `cell.port`.
    """
    module = netlist["modules"][top]
    names: dict[int, tuple[tuple[int, int], str]] = {}
    for net, entry in module["netnames"].items():
        if entry.get("hide_name"):
            continue
        bits = entry["bits"]
        for index, bit in enumerate(bits):
            if not isinstance(bit, int):
                continue
            label = net if len(bits) == 1 else f"{net}[{index}]"
            rank = (0 if net.startswith("accelerator.") else 1, len(label))
            if bit not in names or (rank, label) < names[bit]:
                names[bit] = (rank, label)
    cells: dict[str, Any] = module["cells"]

    def name(cell: str, port: str) -> str:
        bits = cells.get(cell, {}).get("connections", {}).get(port, [])
        if len(bits) == 1 and bits[0] in names:
            return names[bits[0]][1]
        return f"{cell}.{port}"

    return name


def _macro_cell(cell: str) -> str | None:
    """Return the Yosys cell a nextpnr-nexus DSP sub-cell was expanded from (`x/REG18_CORE_x2`
    is part of `x`), None for any other cell."""
    parent, slash, _ = cell.rpartition("/")
    return parent if slash else None


def critical_path(report: dict[str, Any], namer: Namer) -> dict[str, Any] | None:
    """Return the worst register-to-register path: its clock, delay and logic delay (ns; a
    leading clock-skew step, as nextpnr-nexus writes, included), start (the signal its first
    cell drives) and end (the signal of the flip-flop it ends at; the net arriving, for a
    block RAM or DSP input, or the DSP cell Yosys wrote when the path ends inside a Nexus DSP
    block), and the cells and ports at both ends."""
    paths = [path for path in report.get("critical_paths", [])
             if path.get("from") == path.get("to") and path.get("path")]
    if not paths:
        return None
    worst = max(paths, key=lambda path: sum(float(step["delay"]) for step in path["path"]))
    steps = worst["path"]
    launch = next(step for step in steps if step.get("type") != "clk-skew")
    first, last = launch["from"], steps[-1]["to"]
    nets = [str(step["net"]) for step in steps if step.get("type") == "routing" and "net" in step]
    start = namer(first["cell"], first["port"])
    if start == f"{first['cell']}.{first['port']}" and nets:
        start = nets[0]
    end = namer(last["cell"], "Q")
    if end == f"{last['cell']}.Q" and nets:
        end = _macro_cell(last["cell"]) or nets[-1]
    return {
        "clock": worst["from"],
        "delay_ns": round(sum(float(step["delay"]) for step in steps), 3),
        "logic_ns": round(sum(float(step["delay"]) for step in steps
                              if step.get("type") not in ("routing", "clk-skew")), 3),
        "start": start,
        "end": end,
        "start_cell": f"{first['cell']}.{first['port']}",
        "end_cell": f"{last['cell']}.{last['port']}",
    }


def read_outcome(part: Part, log: str, report: dict[str, Any] | None,
                 netlist: dict[str, Any] | None) -> dict[str, Any]:
    """Return `fits`, `resources`, `shortfall`, `fmax_mhz` and `critical_path` from nextpnr's
    log, its report (None: nextpnr stopped before routing) and Yosys' netlist of the harness."""
    utilisation = parse_utilisation(log)
    path, achieved = None, None
    if report is not None:
        utilisation = report.get("utilization", utilisation)
        achieved, _ = fmax_mhz(report)
        if netlist is not None:
            path = critical_path(report, signal_namer(netlist, HARNESS_TOP))
    return {
        "fits": report is not None,
        "resources": resources(part, utilisation),
        "shortfall": shortfall(part, utilisation),
        "fmax_mhz": None if achieved is None else round(achieved, 2),
        "critical_path": path,
    }
