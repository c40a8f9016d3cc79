"""Deepest register-to-register paths of a mapped ECP5 netlist, without place and route.

Usage (any Yosys JSON netlist written by ``synth_ecp5``, e.g. the flow's ``netlist.json``)::

    python bench/fpga_logic_depth.py NETLIST.json [--top N] [--module NAME]

Contract: reads one flattened module (the one with the most cells unless ``--module`` names
it) and walks its combinational cells (LUT4, PFUMX, L6MUX21, CCU2C, TRELLIS_DPR16X4 reads,
MULT18X18D without its registers) from every start point (flip-flop outputs, block-RAM read
data, module inputs, constants) to every end point (flip-flop data, enable and reset inputs,
block-RAM and LUT-RAM write ports, module outputs). For each end point it keeps the latest
arrival under a fixed estimate of ECP5 delays (``DELAYS``: cell delay plus one routing hop
per net, none on the dedicated carry wire) and the number of LUT levels on that path (LUT4,
PFUMX, L6MUX21, LUT-RAM read, one per carry chain entered). It prints the ``N`` worst end
points, one per register (the bits of one register are folded), each with its path as the
design's own signal names. The figures rank paths; they are not nextpnr's timing: routing in
a full part can be several times the fixed hop delay.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# Estimated delays in ns (ECP5 speed grade 6 order of magnitude; routing per net hop).
DELAYS = {
    "hop": 0.6,
    "LUT4": 0.4,
    "PFUMX": 0.2,
    "L6MUX21": 0.2,
    "CCU2C": 0.4,
    "carry": 0.06,
    "TRELLIS_DPR16X4": 0.4,
    "MULT18X18D": 3.9,
    "clk_to_q": 0.4,
    "bram_clk_to_q": 2.5,
}
COMBINATIONAL = {"LUT4", "PFUMX", "L6MUX21", "CCU2C", "MULT18X18D", "TRELLIS_DPR16X4"}
LEVEL_CELLS = {"LUT4", "PFUMX", "L6MUX21", "TRELLIS_DPR16X4"}


@dataclass(frozen=True)
class Arrival:
    """Latest arrival at one net bit: time in ns, LUT levels, and the bit it came from."""

    time: float
    levels: int
    via: object  # predecessor bit, or None at a start point
    cell: str  # the cell driving this bit ("" at a start point)


class Netlist:
    """One module of a Yosys JSON netlist, indexed by net bit."""

    def __init__(self, module: dict):
        self.cells: dict[str, dict] = module["cells"]
        self.driver: dict[object, tuple[str, str]] = {}
        for name, cell in self.cells.items():
            for port, direction in cell.get("port_directions", {}).items():
                if direction == "output":
                    for bit in cell["connections"][port]:
                        self.driver[bit] = (name, port)
        self.names = _bit_names(module["netnames"])
        self.inputs = {
            b for p in module["ports"].values() if p["direction"] == "input" for b in p["bits"]
        }

    def name(self, bit: object) -> str:
        """The design's own name of a bit, 'name[i]', or the bit itself if it has none."""
        return self.names.get(bit, str(bit))


def _bit_names(netnames: dict) -> dict[object, str]:
    """Each bit's best name: public names first, then the shortest."""
    best: dict[object, tuple[int, int, str]] = {}
    for name, net in netnames.items():
        rank = _name_rank(name, net)
        for i, bit in enumerate(net["bits"]):
            label = name if len(net["bits"]) == 1 else f"{name}[{i}]"
            key = (rank, len(name), label)
            if bit not in best or key < best[bit]:
                best[bit] = key
    return {bit: key[2] for bit, key in best.items()}


GENERATED = re.compile(r"_(LUT4|TRELLIS_FF|CCU2C|PFUMX|L6MUX21|MULT18X18D|DP16KD|TRELLIS_DPR16X4)_")


def _name_rank(name: str, net: dict) -> int:
    """0 for the design's own names in a unit, 1 at the harness top, 2 for cells' port names,
    3 for Yosys' private names."""
    if "$" in name or net.get("hide_name"):
        return 3
    if GENERATED.search(name + "_"):
        return 2
    return 0 if "." in name else 1


def _input_bits(cell: dict, out_port: str) -> list[tuple[object, bool]]:
    """The input bits that reach ``out_port``, each with whether it arrives on the carry wire."""
    if cell["type"] == "TRELLIS_DPR16X4":
        return [(b, False) for b in cell["connections"]["RAD"]]
    bits = []
    for port, direction in cell["port_directions"].items():
        if direction == "input":
            carry = cell["type"] == "CCU2C" and port == "CIN"
            bits += [(b, carry) for b in cell["connections"][port]]
    return bits


def _cell_delay(kind: str, through_carry: bool, out_port: str) -> float:
    """Delay through one cell from an input to ``out_port``."""
    if kind == "CCU2C" and through_carry and out_port == "COUT":
        return DELAYS["carry"]
    return DELAYS[kind]


class DepthWalker:
    """Latest arrival at every bit, computed on demand without recursion."""

    def __init__(self, net: Netlist):
        self.net = net
        self.memo: dict[object, Arrival] = {}

    def _start(self, bit: object) -> Arrival | None:
        """Arrival at a start point, or None when ``bit`` is driven by a combinational cell."""
        if bit in ("0", "1", "x", "z") or bit in self.net.inputs or bit not in self.net.driver:
            return Arrival(0.0, 0, None, "")
        cell = self.net.cells[self.net.driver[bit][0]]
        if cell["type"] == "DP16KD":
            return Arrival(DELAYS["bram_clk_to_q"], 0, None, "")
        if cell["type"] not in COMBINATIONAL:
            return Arrival(DELAYS["clk_to_q"], 0, None, "")
        return None

    def arrival(self, bit: object) -> Arrival:
        """Latest arrival at ``bit`` (at the input pins it drives, routing hop included)."""
        stack = [bit]
        while stack:
            top = stack[-1]
            if top in self.memo:
                stack.pop()
                continue
            start = self._start(top)
            if start is not None:
                self.memo[top] = start
                stack.pop()
                continue
            cell_name, port = self.net.driver[top]
            cell = self.net.cells[cell_name]
            ins = _input_bits(cell, port)
            missing = [b for b, _ in ins if b not in self.memo]
            if missing:
                stack.extend(missing)
                continue
            self.memo[top] = self._through(top, cell_name, cell, port, ins)
            stack.pop()
        return self.memo[bit]

    def _through(self, bit, cell_name, cell, port, ins) -> Arrival:
        """Arrival at ``bit`` from its driving cell's latest input."""
        kind = cell["type"]
        best = Arrival(-1.0, 0, None, cell_name)
        for b, carry in ins:
            a = self.memo[b]
            hop = 0.0 if carry else DELAYS["hop"]
            t = a.time + hop + _cell_delay(kind, carry, port)
            enters_chain = kind == "CCU2C" and not carry
            levels = a.levels + int(kind in LEVEL_CELLS or enters_chain)
            if t > best.time:
                best = Arrival(t, levels, b, cell_name)
        return best

    def path(self, bit: object) -> list[object]:
        """The bits of the latest path ending at ``bit``, start point first."""
        bits = []
        cur: object = bit
        while cur is not None:
            bits.append(cur)
            cur = self.memo[cur].via
        return bits[::-1]


def end_points(net: Netlist) -> list[tuple[str, object]]:
    """(register or memory name, bit) for every sequential input and module output."""
    ends = []
    for name, cell in net.cells.items():
        kind = cell["type"]
        if kind == "TRELLIS_FF":
            ports = ["DI", "CE", "LSR"]
        elif kind == "TRELLIS_DPR16X4":
            ports = ["DI", "WAD", "WRE"]
        elif kind in ("DP16KD", "PDPW16KD"):
            ports = [p for p, d in cell["port_directions"].items() if d == "input"]
        else:
            continue
        for port in ports:
            ends += [(name, b) for b in cell["connections"].get(port, [])]
    return ends


def worst_paths(
    net: Netlist, walker: DepthWalker, top: int
) -> list[tuple[Arrival, str, list[object]]]:
    """The ``top`` latest end points, one per register name."""
    per_register: dict[str, tuple[Arrival, object]] = {}
    for reg, bit in end_points(net):
        a = walker.arrival(bit)
        key = _register_key(net, reg, bit)
        if key not in per_register or a.time > per_register[key][0].time:
            per_register[key] = (a, bit)
    ranked = sorted(per_register.items(), key=lambda kv: -kv[1][0].time)[:top]
    return [(a, key, walker.path(bit)) for key, (a, bit) in ranked]


def _register_key(net: Netlist, reg: str, bit: object) -> str:
    """The register a flip-flop belongs to: its Q net's name without the bit index."""
    cell = net.cells[reg]
    if cell["type"] == "TRELLIS_FF":
        q = net.name(cell["connections"]["Q"][0])
        return q.split("[")[0]
    return reg


def describe(net: Netlist, walker: DepthWalker, path: list[object]) -> list[str]:
    """One line per bit of a path: arrival, LUT levels, driving cell type, the bit's name.

    Runs of carry-chain bits are folded into their first and last bit.
    """
    lines = []
    for i, bit in enumerate(path):
        a = walker.memo[bit]
        kind = net.cells[a.cell]["type"] if a.cell else "start"
        nxt = walker.memo[path[i + 1]] if i + 1 < len(path) else None
        chained = kind == "CCU2C" and nxt is not None and nxt.cell and (
            net.cells[nxt.cell]["type"] == "CCU2C") and nxt.levels == a.levels
        if chained and lines and lines[-1].endswith("..."):
            continue
        suffix = " ..." if chained else ""
        lines.append(f"{a.time:6.2f} {a.levels:3d} {kind:<15} {net.name(bit)}{suffix}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("netlist", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--module", default=None)
    args = parser.parse_args(argv)
    modules = json.loads(args.netlist.read_text())["modules"]
    name = args.module or max(modules, key=lambda m: len(modules[m].get("cells", {})))
    net = Netlist(modules[name])
    walker = DepthWalker(net)
    for a, key, path in worst_paths(net, walker, args.top):
        print(f"{a.time:6.2f} ns  {a.levels:3d} levels  {key}")
        for line in describe(net, walker, path):
            print("    " + line)
    return 0


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    raise SystemExit(main())
