"""Synthesis figures per component of the accelerator, from Yosys' per-module `stat -json`.

The synthesis keeps the hierarchy (`systolic.verilog.synth`), and Amaranth emits one Verilog
module per instance, named by its path below the top (`<top>.execute.array.mesh`), so every
module is one part of the design. `COMPONENTS` maps the paths to the components an architect
weighs (hdl/accelerator.py builds the tree):

| component | modules (below the top) | memories |
| --- | --- | --- |
| pe_array | execute.array and below (mesh of PEs, skew and deskew registers) | |
| execute_control | execute, execute.meta_fifo, execute.tile_fifo | the FIFOs' |
| scratchpad | | the top's spad_in, spad_wt |
| params | | the top's params (output-stage parameters) |
| accumulator | acc | its row memory |
| output_stage | store.stage | |
| vector_unit | store.vector, store.table (activation table) | |
| store | store, store.writer, store.fifo | the FIFO's |
| dma | load and below (segment walker, row gather) | |
| dispatcher | dispatcher and its queues, entries, ex_done | the queues' |
| counters | counters | |
| glue | the top module's own logic | |

A path not listed goes to its nearest listed ancestor (so new submodules are counted). Per
component: word-level cells (submodule instances not counted), flip-flop bits, `$mul` cells,
memory bits (from the step before `memory` passes, per memory by name) and, when the design
was mapped to gates, Yosys' `stat -tech cmos` transistor estimate of the logic (memories,
kept as memory cells, have none: see memory bits).
"""

import dataclasses
import re
from typing import Any

__all__ = ["COMPONENTS", "ORDER", "ComponentFigures", "component_figures", "component_of",
           "memory_declarations", "render_components"]

COMPONENTS: dict[str, str] = {
    "": "glue",
    "execute": "execute_control",
    "execute.array": "pe_array",
    "acc": "accumulator",
    "store": "store",
    "store.stage": "output_stage",
    "store.vector": "vector_unit",
    "store.table": "vector_unit",
    "load": "dma",
    "dispatcher": "dispatcher",
    "entries": "dispatcher",
    "ex_done": "dispatcher",
    "counters": "counters",
}
"""Module path below the top -> component (nearest listed ancestor wins)."""

TOP_MEMORIES = {"spad_in": "scratchpad", "spad_wt": "scratchpad", "params": "params"}
"""The top module's memories by name -> component (others stay with `glue`)."""

ORDER = ("pe_array", "scratchpad", "params", "accumulator", "output_stage", "vector_unit",
         "store", "dma", "dispatcher", "execute_control", "counters", "glue")  # fmt: skip
"""The components in the order reports list them."""

_WIDTH_SUFFIX = re.compile(r"^(\$\w+?)_(\d+)$")
_UNKNOWN = "+"


@dataclasses.dataclass
class ComponentFigures:
    """One component's figures (module docstring)."""

    cells: int = 0
    flip_flops: int = 0
    multipliers: int = 0
    memory_bits: int = 0
    memories: dict[str, int] = dataclasses.field(default_factory=dict)  #: name -> bits
    transistors: int | None = None  #: logic only; None: not mapped to gates

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def component_of(path: str) -> str:
    """Return the component of the module at `path` below the top ("" is the top)."""
    parts = path.split(".") if path else []
    for length in range(len(parts), -1, -1):
        key = ".".join(parts[:length])
        if key in COMPONENTS:
            return COMPONENTS[key]
    return "glue"


def _paths(modules: dict[str, Any], top: str) -> dict[str, str]:
    """Module name in a stat file -> path below the top."""
    paths = {}
    for name in modules:
        bare = name.removeprefix("\\")
        paths[name] = "" if bare == top else bare.removeprefix(top + ".")
    return paths


def _own_transistors(modules: dict[str, Any]) -> dict[str, int | None]:
    """Per module, its own transistors: Yosys' per-module estimate includes its submodules."""
    total: dict[str, int | None] = {}
    for name, stats in modules.items():
        text = str(stats.get("estimated_num_transistors", ""))
        total[name] = None if not text or text.endswith(_UNKNOWN) else int(text)
    own: dict[str, int | None] = {}
    for name, stats in modules.items():
        value = total[name]
        children = [f"\\{kind}" for kind in stats.get("num_cells_by_type", {})
                    if f"\\{kind}" in modules]  # fmt: skip
        for child in children:
            sub = total[child]
            value = None if value is None or sub is None else value - sub
        own[name] = value
    return own


def _add_cells(figures: ComponentFigures, types: dict[str, int], modules: dict[str, Any]) -> None:
    for kind, count in types.items():
        if not kind.startswith("$") or kind.startswith("$scopeinfo"):
            continue  # a submodule instance, or flatten's bookkeeping
        figures.cells += int(count)
        match = _WIDTH_SUFFIX.match(kind)
        if match and "dff" in match.group(1):
            figures.flip_flops += int(match.group(2)) * int(count)
        elif match and match.group(1) == "$mul":
            figures.multipliers += int(count)


def component_figures(top: str, rtl: dict[str, Any], coarse: dict[str, Any],
                      gates: dict[str, Any] | None = None,
                      memories: dict[str, dict[str, int]] | None = None,
                      ) -> dict[str, ComponentFigures]:
    """Return the figures per component, in `ORDER`, from the hierarchical `stat -json` files.

    `memories` gives, per module path, each memory's bits by name (`memory_declarations`);
    without it a module's memory bits are counted under the name "memory".
    """
    result = {name: ComponentFigures() for name in ORDER}
    modules = coarse.get("modules", {})
    paths = _paths(modules, top)
    for name, stats in modules.items():
        _add_cells(result[component_of(paths[name])], stats.get("num_cells_by_type", {}), modules)
    for name, stats in rtl.get("modules", {}).items():
        path = _paths({name: None}, top)[name]
        bits = int(stats.get("num_memory_bits", 0))
        named = (memories or {}).get(path) or ({"memory": bits} if bits else {})
        for memory, size in named.items():
            owner = TOP_MEMORIES.get(memory, "glue") if path == "" else component_of(path)
            label = f"{path}.{memory}" if path else memory
            result[owner].memories[label] = size
            result[owner].memory_bits += size
    if gates is not None:
        gate_modules = gates.get("modules", {})
        own = _own_transistors(gate_modules)
        gate_paths = _paths(gate_modules, top)
        for figures in result.values():
            figures.transistors = 0
        for name, count in own.items():
            figures = result[component_of(gate_paths[name])]
            figures.transistors = None if count is None or figures.transistors is None \
                else figures.transistors + count
    return result


_MODULE = re.compile(r"^module (\S+)\s*\(", re.MULTILINE)
_MEMORY = re.compile(r"^\s*reg \[(\d+):0\] (\S+) \[(\d+):0\];", re.MULTILINE)


def memory_declarations(verilog: str, top: str) -> dict[str, dict[str, int]]:
    """Return, per module path below `top`, the bits of each memory the Verilog declares
    (`reg [W-1:0] name [D-1:0];`, as Yosys' Verilog backend writes a memory)."""
    starts = [(match.start(), match.group(1).removeprefix("\\")) for match in _MODULE.finditer(verilog)]
    found: dict[str, dict[str, int]] = {}
    for index, (start, name) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(verilog)
        path = "" if name == top else name.removeprefix(top + ".")
        for match in _MEMORY.finditer(verilog, start, end):
            width, memory, depth = int(match.group(1)) + 1, match.group(2), int(match.group(3)) + 1
            found.setdefault(path, {})[memory.removeprefix("\\")] = width * depth
    return found


def render_components(components: dict[str, dict[str, Any]]) -> list[str]:
    """Return the per-component table `systolic verilog --report` prints (transistors when
    the design was mapped to gates)."""
    mapped = any(figures.get("transistors") is not None for figures in components.values())
    header = ["component", "cells", "flip-flops", "multipliers", "memory bits"]
    header += ["transistors"] if mapped else []
    rows = []
    for name, figures in components.items():
        row = [name] + [f"{figures[key]:,}" for key in
                        ("cells", "flip_flops", "multipliers", "memory_bits")]  # fmt: skip
        if mapped:
            count = figures.get("transistors")
            row.append("unknown" if count is None else f"{count:,}")
        rows.append(row)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  " + "  ".join(cells))
    return lines
